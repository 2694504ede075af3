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
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
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
		adminConf:       admin,
		endpoint:        endpoint,
		caHashes:        hashes,
		controlPlane:    d.Cfg.ControlPlaneEndpoint != "",
		uploadedCerts:   d.Cfg.CertificateKey != "",
		certificateKey:  d.Cfg.CertificateKey,
		hideKey:         d.SkipCertificateKeyPrint,
		hideToken:       d.SkipTokenPrint,
		certificatesTTL: fmt.Sprintf("%g hours", copycerts.TokenTTL.Hours()),
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

// joinMessage is the text that ends a successful "kubeadm init".
type joinMessage struct {
	adminConf       string
	endpoint        string
	caHashes        []string
	tokens          []string
	controlPlane    bool // print the control-plane join command
	uploadedCerts   bool // the certificates are in the kubeadm-certs Secret, under certificateKey
	certificateKey  string
	hideKey         bool
	hideToken       bool
	certificatesTTL string
}

func (m joinMessage) write(w io.Writer) {
	fmt.Fprintf(w, `
Your Kubernetes control plane is up and running.

To use the cluster as a regular user, copy the administrator's kubeconfig file:

  mkdir -p $HOME/.kube
  sudo cp -i %[1]s $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

As root, you can instead point kubectl at it directly:

  export KUBECONFIG=%[1]s

Next, deploy a pod network add-on so that pods can reach each other: pick one
from https://kubernetes.io/docs/concepts/cluster-administration/addons/
and install it with "kubectl apply -f <add-on>.yaml".
`, m.adminConf)
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
		if m.controlPlane {
			if m.uploadedCerts {
				key := m.certificateKey
				if m.hideKey {
					key = withheld
				}
				fmt.Fprintf(w, "\nTo add control-plane nodes, run this as root on each of them:\n\n  %s\n", m.command(token, " \\\n\t--control-plane --certificate-key "+key))
				fmt.Fprintf(w, `
The certificate key decrypts the cluster's CA keys: keep it secret. The
uploaded certificates are deleted after %s; to upload them again, run
"kubeadm init phase upload-certs --upload-certs".
`, m.certificatesTTL)
			} else {
				fmt.Fprintf(w, "\nTo add control-plane nodes, first copy the certificate authorities and the\nservice-account key pair to each of them, then run this as root on each:\n\n  %s\n", m.command(token, " \\\n\t--control-plane"))
			}
		}
		fmt.Fprintf(w, "\nTo add worker nodes, run this as root on each of them:\n\n%s\n", m.command(token, ""))
	}
}

// command is a "kubeadm join" command line in upstream's layout, one
// flag group per continued line, followed by extra.
func (m joinMessage) command(token, extra string) string {
	hashes := make([]string, 0, len(m.caHashes))
	for _, h := range m.caHashes {
		hashes = append(hashes, "--discovery-token-ca-cert-hash "+h)
	}
	return fmt.Sprintf("kubeadm join %s --token %s \\\n\t%s%s", m.endpoint, token, strings.Join(hashes, " "), extra)
}
