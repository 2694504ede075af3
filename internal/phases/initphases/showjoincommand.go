package initphases

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// withheld replaces a secret the user asked not to print.
const withheld = "<value withheld>"

// ShowJoinCommandPhase prints how to use the new cluster and the commands
// that join more nodes to it: for each bootstrap token, a control-plane
// join command (only when controlPlaneEndpoint is set, since joining a
// second control-plane node needs a shared endpoint) and a worker join
// command. The API server address and the CA public key hashes come from
// the admin kubeconfig file, as upstream kubeadm takes them; the token is
// printed unless --skip-token-print, the certificate key unless
// --skip-certificate-key-print. As upstream, the control-plane command
// carries --certificate-key whenever there is a key (made by upload-certs,
// or given in the configuration for certificates uploaded earlier), and
// asks to copy the certificates by hand otherwise. It only reads, so it
// can run any number of times.
func ShowJoinCommandPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "show-join-command",
		Short: "Print the commands that join control-plane and worker nodes",
		Long: `Print how to start using the cluster and the "kubeadm join" commands that add
control-plane and worker nodes to it.`,
		Run: func(_ context.Context, d *Data) error { return showJoinCommand(d) },
	}
}

func showJoinCommand(d *Data) error {
	admin := d.KubeconfigPath
	if admin == "" {
		admin = filepath.Join(d.KubeconfigDir, "admin.conf")
	}
	endpoint, hashes, err := joinTarget(admin)
	if err != nil {
		return err
	}
	msg := joinMessage{
		adminConf:      admin,
		endpoint:       endpoint,
		caHashes:       hashes,
		controlPlane:   d.Cfg.ControlPlaneEndpoint != "" || APIServerLBEnabled(d),
		uploadedCerts:  d.UploadCerts,
		certificateKey: d.Cfg.CertificateKey,
		hideKey:        d.SkipCertificateKeyPrint,
		hideToken:      d.SkipTokenPrint,
	}
	for _, t := range d.Cfg.BootstrapTokens {
		if t.Token != nil {
			msg.tokens = append(msg.tokens, t.Token.String())
		}
	}
	msg.write(d.Out)
	return nil
}

// joinTarget reads the API server endpoint (host:port) and the hashes of
// the CA certificates from the current cluster of a kubeconfig file.
func joinTarget(path string) (string, []string, error) {
	cfg, err := kubeconfig.Load(path)
	if err != nil {
		return "", nil, fmt.Errorf("reading the kubeconfig file %s: %w", path, err)
	}
	cluster, err := kubeconfig.CurrentCluster(path, cfg)
	if err != nil {
		return "", nil, err
	}
	endpoint := strings.TrimPrefix(cluster.Server, "https://")
	if u, err := url.Parse(cluster.Server); err == nil && u.Host != "" {
		endpoint = u.Host
	}
	ca := cluster.CertificateAuthorityData
	if len(ca) == 0 && cluster.CertificateAuthority != "" {
		if ca, err = boundedread.ReadFile(cluster.CertificateAuthority, boundedread.MaxFile); err != nil {
			return "", nil, fmt.Errorf("reading the CA of the kubeconfig file %s: %w", path, err)
		}
	}
	hashes, err := bootstraptoken.CACertHashes(ca)
	if err != nil {
		return "", nil, fmt.Errorf("the CA of the kubeconfig file %s: %w", path, err)
	}
	return endpoint, hashes, nil
}

// joinMessage is the text that ends a successful "kubeadm init". Its lines
// are upstream kubeadm's, byte for byte (trailing spaces included): scripts
// and configuration-management roles grep them and take the join commands
// from them.
type joinMessage struct {
	adminConf      string
	endpoint       string
	caHashes       []string
	tokens         []string
	controlPlane   bool // print the control-plane join command
	uploadedCerts  bool // this run uploaded the certificates (--upload-certs)
	certificateKey string
	hideKey        bool
	hideToken      bool
}

// write prints the whole message once per bootstrap token, as upstream's
// does. The export line names the real admin.conf even in a dry run, as
// upstream's.
func (m joinMessage) write(w io.Writer) {
	if len(m.tokens) == 0 {
		fmt.Fprintf(w, `
There is no bootstrap token to join nodes with; create one with
"kubeadm token create --print-join-command".
`)
	}
	for _, token := range m.tokens {
		if m.hideToken {
			token = withheld
		}
		fmt.Fprintf(w, `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i %s $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=%s

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

`, m.adminConf, filepath.Join(KubernetesDir, "admin.conf"))
		if m.controlPlane {
			key := m.certificateKey
			if key != "" && m.hideKey {
				key = withheld
			}
			if m.uploadedCerts {
				fmt.Fprintf(w, `You can now join any number of control-plane nodes running the following command on each as root:

  %s

Please note that the certificate-key gives access to cluster sensitive data, keep it secret!
As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use
"kubeadm init phase upload-certs --upload-certs" to reload certs afterward.

`, m.command(token, key, true))
			} else {
				fmt.Fprintf(w, `You can now join any number of control-plane nodes by copying certificate authorities
and service account keys on each node and then running the following as root:

  %s

`, m.command(token, key, true))
			}
		}
		fmt.Fprintf(w, "Then you can join any number of worker nodes by running the following on each as root:\n\n%s\n", m.command(token, "", false))
	}
}

// command is a "kubeadm join" command line in upstream's layout: one flag
// group per continued line, each CA hash followed by a space, and for a
// control-plane node "--control-plane " and the certificate key, if any.
func (m joinMessage) command(token, key string, controlPlane bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kubeadm join %s --token %s \\\n\t", m.endpoint, token)
	for _, h := range m.caHashes {
		b.WriteString("--discovery-token-ca-cert-hash " + h + " ")
	}
	if controlPlane {
		b.WriteString("\\\n\t--control-plane ")
		if key != "" {
			b.WriteString("--certificate-key " + key)
		}
	}
	return b.String()
}
