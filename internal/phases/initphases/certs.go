package initphases

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// certsFlags are the flags of "kubeadm init" that the certificate phase
// of name accepts: those that shape its certificate, plus the common ones.
func certsFlags(name string) []string {
	if name == "apiserver" || name == "all" {
		return []string{
			"apiserver-advertise-address", "apiserver-cert-extra-sans", "cert-dir", "config",
			"control-plane-endpoint", "dry-run", "kubernetes-version", "service-cidr", "service-dns-domain",
		}
	}
	return []string{"cert-dir", "config", "dry-run", "kubernetes-version"}
}

// certsShort is the one-line description of the sub-phase of a certificate.
func certsShort(name string) string {
	switch name {
	case pki.CAName:
		return "Create the self-signed Kubernetes CA that signs the identities of the other components"
	case "apiserver":
		return "Create the serving certificate of the Kubernetes API server"
	case "apiserver-kubelet-client":
		return "Create the client certificate the API server uses to reach the kubelets"
	case pki.FrontProxyCAName:
		return "Create the self-signed CA of the front proxy"
	case "front-proxy-client":
		return "Create the client certificate of the front proxy"
	case pki.EtcdCAName:
		return "Create the self-signed CA that signs the identities of etcd"
	case "etcd-server":
		return "Create the serving certificate of etcd"
	case "etcd-peer":
		return "Create the certificate etcd members use with each other"
	case "etcd-healthcheck-client":
		return "Create the client certificate of etcd's liveness probe"
	case "apiserver-etcd-client":
		return "Create the client certificate the API server uses to reach etcd"
	}
	return "Create the " + name + " certificate and key"
}

// CertsPhase creates the certificate authorities, certificates and keys of
// the control plane in Data.CertDir. Each sub-phase re-detects what is on
// disk and converges: valid files are reused untouched, missing ones are
// created, unusable ones are reported by name. Running it twice, or again
// after an interruption, leaves the same files.
//
// Run as a whole ("all", or within init), the group starts making every
// key the run will need in parallel as soon as the run starts (within init,
// while preflight runs); the sub-phases then take them in order, so
// progress lines come in kubeadm's order.
func CertsPhase() workflow.Phase[*Data] { return certsPhase(nil, nil) }

// certsRun is the state one certificate phase tree shares between the
// group's Prepare and its sub-phases: the keys made ahead for one Data.
type certsRun struct {
	newKey    pki.KeyGenerator // nil: pki.NewPrivateKey
	keys      aheadKeys
	headStart *kubeletHeadStart // nil: none
}

// aheadKeys holds the keys a phase group started making in its Prepare,
// for one Data, until its sub-phases take them.
type aheadKeys struct {
	mu   sync.Mutex
	data *Data
	pool *pki.KeyPool
}

// start begins making a key of d's algorithm for each of names, with gen
// (nil: pki.NewPrivateKey). One goroutine per key: the group needs every
// key before it is done, and the scheduler's time slices share the cores
// out evenly, where a worker per core would leave one idle while the other
// makes the last key (key generation takes a random time). With hold, only
// the first key is started now, the others once hold is released.
func (a *aheadKeys) start(ctx context.Context, d *Data, gen pki.KeyGenerator, names []string, hold *pki.KeyHold) {
	var pool *pki.KeyPool
	if hold != nil {
		pool = pki.NewHeldKeyPool(ctx, gen, d.Cfg.KeyAlgorithm(), names, 1, hold)
	} else {
		pool = pki.NewKeyPool(ctx, gen, d.Cfg.KeyAlgorithm(), names, len(names))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.data, a.pool = d, pool
}

// poolFor returns the keys started for d, nil when none were.
func (a *aheadKeys) poolFor(d *Data) *pki.KeyPool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.data != d {
		return nil
	}
	return a.pool
}

// certsPhase is CertsPhase with an injected key generator (for tests),
// telling hs (when not nil) once the cluster CA is in place.
func certsPhase(newKey pki.KeyGenerator, hs *kubeletHeadStart) workflow.Phase[*Data] {
	r := &certsRun{newKey: newKey, headStart: hs}
	sub := []workflow.Phase[*Data]{{
		Name:           "all",
		Short:          "Create every certificate and key",
		RunAllSiblings: true,
		InheritFlags:   certsFlags("all"),
	}}
	for _, c := range pki.CertTable() {
		sub = append(sub, workflow.Phase[*Data]{
			Name:         c.Name,
			Short:        certsShort(c.Name),
			Long:         certLong(c),
			InheritFlags: certsFlags(c.Name),
			Run: func(ctx context.Context, d *Data) error {
				if err := r.runCert(d, c); err != nil {
					return err
				}
				if c.Name == pki.CAName {
					hs.caReady(ctx, d)
				}
				return nil
			},
		})
	}
	sub = append(sub, workflow.Phase[*Data]{
		Name:  pki.ServiceAccountKeyBase,
		Short: "Create the key pair that signs and verifies service account tokens",
		Long: "Create the private key that signs service account tokens and its public half, " +
			"as sa.key and sa.pub.\n\nAn existing sa.key is kept (a missing sa.pub is derived from it).",
		InheritFlags: certsFlags(pki.ServiceAccountKeyBase),
		Run:          r.runServiceAccount,
	})
	return workflow.Phase[*Data]{
		Name:  "certs",
		Short: "Create the certificates and keys of the control plane",
		Long: "Create the certificate authorities, certificates and keys of the control plane.\n\n" +
			"Files already present and valid are kept.",
		Phases:  sub,
		Prepare: r.startKeys,
		Run: func(_ context.Context, d *Data) error {
			fmt.Fprintf(d.Out, "[certs] Using certificateDir folder %q\n", d.CertDir)
			return nil
		},
	}
}

func certLong(c pki.Cert) string {
	what := "certificate and key"
	if c.IsCA() {
		what = "CA certificate and key"
	}
	s := fmt.Sprintf("%s, written as %s.crt and %s.key.\n\n", certsShort(c.Name), c.BaseName, c.BaseName)
	if c.SANs != nil && c.Name != "apiserver" {
		s += "Besides the configured ones, its names are the node name, localhost, the advertise address, 127.0.0.1 and ::1.\n\n"
	}
	if c.LocalEtcd {
		s += "Nothing is done when etcd is external.\n\n"
	}
	return s + fmt.Sprintf("When the %s already exist and are valid, they are kept.", what)
}

// startKeys starts making, in the background, the keys the sub-phases
// will need: those of the files missing now.
func (r *certsRun) startKeys(ctx context.Context, d *Data) {
	r.keys.start(ctx, d, r.newKey, pki.KeysNeeded(d.Cfg, d.CertDir), r.headStart.plan(d))
}

// options returns the pki options for the sub-phase of name.
func (r *certsRun) options(d *Data, name string) pki.Options {
	opts := pki.Options{Now: d.Now, NewKey: r.newKey}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if pool := r.keys.poolFor(d); pool != nil {
		opts.NewKey = pool.Generator(name)
	}
	return opts
}

func (r *certsRun) runCert(d *Data, c pki.Cert) error {
	if c.LocalEtcd && pki.ExternalEtcd(&d.Cfg.ClusterConfiguration) {
		if c.IsCA() {
			fmt.Fprintf(d.Out, "[certs] External etcd mode: Skipping %s certificate authority generation\n", c.BaseName)
		} else {
			fmt.Fprintf(d.Out, "[certs] External etcd mode: Skipping %s certificate generation\n", c.BaseName)
		}
		return nil
	}
	res, err := pki.EnsureCert(d.Cfg, d.CertDir, c, r.options(d, c.Name))
	if err != nil {
		return err
	}
	if err := restrictCertModes(d, c); err != nil {
		return err
	}
	switch {
	case res.Outcome == pki.Generated:
		fmt.Fprintf(d.Out, "[certs] Generating %q certificate and key\n", c.BaseName)
		if c.SANs != nil {
			fmt.Fprintf(d.Out, "[certs] %s serving cert is signed for DNS names [%s] and IPs [%s]\n",
				c.BaseName, strings.Join(res.Certificate.DNSNames, " "), joinIPs(res.Certificate.IPAddresses))
		}
	case res.Outcome == pki.Keyless:
		fmt.Fprintf(d.Out, "[certs] Using existing %s keyless certificate authority\n", c.BaseName)
	case c.IsCA():
		fmt.Fprintf(d.Out, "[certs] Using existing %s certificate authority\n", c.BaseName)
	default:
		fmt.Fprintf(d.Out, "[certs] Using existing %s certificate and key on disk\n", c.BaseName)
	}
	return nil
}

func (r *certsRun) runServiceAccount(_ context.Context, d *Data) error {
	outcome, err := pki.EnsureServiceAccountKey(d.Cfg, d.CertDir, r.options(d, pki.ServiceAccountKeyBase))
	if err != nil {
		return err
	}
	if hardened(d) && !d.DryRun {
		if err := restrictFileModes(pki.KeyPath(d.CertDir, pki.ServiceAccountKeyBase), pki.PublicKeyPath(d.CertDir, pki.ServiceAccountKeyBase)); err != nil {
			return err
		}
	}
	switch {
	case outcome == pki.Generated:
		fmt.Fprintf(d.Out, "[certs] Generating %q key and public key\n", pki.ServiceAccountKeyBase)
	case pki.KeylessCA(d.CertDir, mustCert(pki.CAName)):
		fmt.Fprintf(d.Out, "[certs] Using existing %s keys\n", pki.ServiceAccountKeyBase)
	default:
		fmt.Fprintf(d.Out, "[certs] Using the existing %q key\n", pki.ServiceAccountKeyBase)
	}
	return nil
}

func mustCert(name string) pki.Cert {
	c, _ := pki.LookupCert(name)
	return c
}

func joinIPs(ips []net.IP) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, " ")
}
