package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// certWant is what a certificate of the tree must hold, as upstream
// kubeadm v1.36.3 writes it (checked against its files).
type certWant struct {
	cn, org, issuer string
	dns             []string
	ips             []string
	eku             []x509.ExtKeyUsage
	ca              bool
}

// defaultWant is the tree of testConfig().
func defaultWant() map[string]certWant {
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	etcdDNS, etcdIPs := []string{"localhost", "node1"}, []string{"192.168.1.10", "127.0.0.1", "::1"}
	return map[string]certWant{
		"ca": {cn: "kubernetes", issuer: "kubernetes", dns: []string{"kubernetes"}, ca: true},
		"apiserver": {cn: "kube-apiserver", issuer: "kubernetes", eku: server,
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "node1"},
			ips: []string{"10.96.0.1", "192.168.1.10"}},
		"apiserver-kubelet-client": {cn: "kube-apiserver-kubelet-client", issuer: "kubernetes", eku: client},
		"front-proxy-ca":           {cn: "front-proxy-ca", issuer: "front-proxy-ca", dns: []string{"front-proxy-ca"}, ca: true},
		"front-proxy-client":       {cn: "front-proxy-client", issuer: "front-proxy-ca", eku: client},
		"etcd/ca":                  {cn: "etcd-ca", issuer: "etcd-ca", dns: []string{"etcd-ca"}, ca: true},
		"etcd/server":              {cn: "node1", issuer: "etcd-ca", eku: both, dns: etcdDNS, ips: etcdIPs},
		"etcd/peer":                {cn: "node1", issuer: "etcd-ca", eku: both, dns: etcdDNS, ips: etcdIPs},
		"etcd/healthcheck-client":  {cn: "kube-etcd-healthcheck-client", issuer: "etcd-ca", eku: client},
		"apiserver-etcd-client":    {cn: "kube-apiserver-etcd-client", issuer: "etcd-ca", eku: client},
	}
}

func TestTreeMatchesKubeadm(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*kubeadm.InitConfiguration)
		want func(map[string]certWant)
	}{
		{name: "defaults, RSA-2048"},
		{name: "ECDSA-P256", cfg: func(c *kubeadm.InitConfiguration) { c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256 }},
		{name: "ECDSA-P384", cfg: func(c *kubeadm.InitConfiguration) { c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP384 }},
		{
			name: "IPv6",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.LocalAPIEndpoint.AdvertiseAddress = "fd00::10"
				c.Networking.ServiceSubnet = "fd00:1::/112"
			},
			want: func(w map[string]certWant) {
				setIPs(w, "apiserver", "fd00:1::1", "fd00::10")
				setIPs(w, "etcd/server", "fd00::10", "127.0.0.1", "::1")
				setIPs(w, "etcd/peer", "fd00::10", "127.0.0.1", "::1")
			},
		},
		{
			// Only the first subnet's address, as kubeadm does.
			name: "dual-stack",
			cfg:  func(c *kubeadm.InitConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/16,fd00:1::/112" },
		},
		{
			name: "dual-stack, IPv6 first",
			cfg:  func(c *kubeadm.InitConfiguration) { c.Networking.ServiceSubnet = "fd00:1::/112,10.96.0.0/16" },
			want: func(w map[string]certWant) { setIPs(w, "apiserver", "fd00:1::1", "192.168.1.10") },
		},
		{
			name: "certSANs, endpoint and etcd SANs",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.ControlPlaneEndpoint = "lb.example.com:6443"
				c.APIServer.CertSANs = []string{"10.0.0.1", "foo.example.com", "*.wild.example", "node1", "kubernetes", "192.168.1.10", "::1", "Zed.example", "a.example"}
				c.Etcd.Local.ServerCertSANs = []string{"etcd.example", "10.9.9.9", "localhost", "127.0.0.1", "aaa.example"}
				c.Etcd.Local.PeerCertSANs = []string{"peer.example", "10.8.8.8"}
			},
			want: func(w map[string]certWant) {
				a := w["apiserver"]
				a.dns = []string{"*.wild.example", "a.example", "foo.example.com", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "lb.example.com", "node1", "zed.example"}
				a.ips = []string{"10.96.0.1", "192.168.1.10", "10.0.0.1", "::1"}
				w["apiserver"] = a
				s := w["etcd/server"]
				s.dns = []string{"aaa.example", "etcd.example", "localhost", "node1"}
				s.ips = []string{"192.168.1.10", "127.0.0.1", "::1", "10.9.9.9"}
				w["etcd/server"] = s
				p := w["etcd/peer"]
				p.dns = []string{"localhost", "node1", "peer.example"}
				p.ips = []string{"192.168.1.10", "127.0.0.1", "::1", "10.8.8.8"}
				w["etcd/peer"] = p
			},
		},
		{
			name: "IP endpoint before certSANs",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.ControlPlaneEndpoint = "10.1.1.1:6443"
				c.APIServer.CertSANs = []string{"10.0.0.2", "10.1.1.1", "10.96.0.1", "0:0::1", "::1", "fd00::5"}
			},
			want: func(w map[string]certWant) {
				setIPs(w, "apiserver", "10.96.0.1", "192.168.1.10", "10.1.1.1", "10.0.0.2", "::1", "fd00::5")
			},
		},
		{
			name: "IPv6 endpoint",
			cfg:  func(c *kubeadm.InitConfiguration) { c.ControlPlaneEndpoint = "[fd00::1]:6443" },
			want: func(w map[string]certWant) { setIPs(w, "apiserver", "10.96.0.1", "192.168.1.10", "fd00::1") },
		},
		{
			name: "DNS domain and service subnet",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.Networking.DNSDomain = "corp.internal"
				c.Networking.ServiceSubnet = "10.100.0.0/24"
			},
			want: func(w map[string]certWant) {
				a := w["apiserver"]
				a.dns[3] = "kubernetes.default.svc.corp.internal"
				a.ips[0] = "10.100.0.1"
				w["apiserver"] = a
			},
		},
		{
			name: "external etcd",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.Etcd.Local = nil
				c.Etcd.External = &kubeadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.5:2379"}}
			},
			want: func(w map[string]certWant) {
				for _, n := range []string{"etcd/ca", "etcd/server", "etcd/peer", "etcd/healthcheck-client", "apiserver-etcd-client"} {
					delete(w, n)
				}
			},
		},
		{
			// Leaves may outlive their CA, as with kubeadm.
			name: "validity periods",
			cfg: func(c *kubeadm.InitConfiguration) {
				c.CertificateValidityPeriod = &metav1.Duration{Duration: 300 * time.Hour}
				c.CACertificateValidityPeriod = &metav1.Duration{Duration: 200 * time.Hour}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(cfg)
				configtest.Parse(cfg)
			}
			want := defaultWant()
			if tt.want != nil {
				tt.want(want)
			}
			dir := mustTree(t, cfg)

			var names []string
			for _, c := range Certificates(&cfg.ClusterConfiguration) {
				names = append(names, c.BaseName)
				w, ok := want[c.BaseName]
				if !ok {
					t.Fatalf("%s: not expected in this tree", c.BaseName)
				}
				checkCert(t, dir, c, w, cfg)
			}
			if len(names) != len(want) {
				t.Errorf("tree has %v, want %d certificates", names, len(want))
			}
			checkModes(t, dir)
			key, err := LoadKey(KeyPath(dir, "sa"))
			if err != nil {
				t.Fatal(err)
			}
			checkKeyType(t, "sa.key", key.Public(), cfg.EncryptionAlgorithm)
		})
	}
}

func setIPs(w map[string]certWant, name string, ips ...string) {
	c := w[name]
	c.ips = ips
	w[name] = c
}

func checkCert(t *testing.T, dir string, c Cert, w certWant, cfg *kubeadm.InitConfiguration) {
	t.Helper()
	cert, key, err := LoadCertAndKey(dir, c.BaseName)
	if err != nil {
		t.Fatal(err)
	}
	name := c.BaseName
	if cert.Subject.CommonName != w.cn || strings.Join(cert.Subject.Organization, ",") != w.org {
		t.Errorf("%s: subject %q, want CN=%s O=%s", name, cert.Subject, w.cn, w.org)
	}
	if cert.Issuer.CommonName != w.issuer {
		t.Errorf("%s: issuer %q, want %s", name, cert.Issuer, w.issuer)
	}
	if !slices.Equal(cert.DNSNames, w.dns) {
		t.Errorf("%s: DNS names %q, want %q", name, cert.DNSNames, w.dns)
	}
	var ips []string
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, w.ips) {
		t.Errorf("%s: IPs %q, want %q", name, ips, w.ips)
	}
	// Digital signature and key encipherment whatever the key type.
	ku := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	if w.ca {
		ku |= x509.KeyUsageCertSign
	}
	if cert.KeyUsage != ku {
		t.Errorf("%s: key usage %b, want %b", name, cert.KeyUsage, ku)
	}
	if !slices.Equal(cert.ExtKeyUsage, w.eku) {
		t.Errorf("%s: ext key usage %v, want %v", name, cert.ExtKeyUsage, w.eku)
	}
	if !cert.BasicConstraintsValid || cert.IsCA != w.ca || cert.MaxPathLen > 0 {
		t.Errorf("%s: basic constraints valid=%v CA=%v pathlen=%d", name, cert.BasicConstraintsValid, cert.IsCA, cert.MaxPathLen)
	}
	if w.ca != (len(cert.SubjectKeyId) > 0) || w.ca == (len(cert.AuthorityKeyId) > 0) {
		t.Errorf("%s: SKI %x AKI %x", name, cert.SubjectKeyId, cert.AuthorityKeyId)
	}
	validity := cfg.CertificateValidityPeriod.Duration
	if w.ca {
		validity = cfg.CACertificateValidityPeriod.Duration
	}
	if !cert.NotBefore.Equal(fixedNow().Add(-5*time.Minute)) || !cert.NotAfter.Equal(fixedNow().Add(validity)) {
		t.Errorf("%s: valid %s to %s", name, cert.NotBefore, cert.NotAfter)
	}
	if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() > 63 {
		t.Errorf("%s: serial %s", name, cert.SerialNumber)
	}
	checkKeyType(t, name, key.Public(), cfg.EncryptionAlgorithm)
	if !w.ca {
		ca, _, err := LoadCA(dir, mustLookup(c.CA))
		if err != nil {
			t.Fatal(err)
		}
		if err := cert.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func checkKeyType(t *testing.T, name string, pub any, alg kubeadm.EncryptionAlgorithmType) {
	t.Helper()
	var got string
	switch k := pub.(type) {
	case *rsa.PublicKey:
		got = "RSA-" + strconv.Itoa(k.N.BitLen())
	case *ecdsa.PublicKey:
		got = map[elliptic.Curve]string{elliptic.P256(): "ECDSA-P256", elliptic.P384(): "ECDSA-P384"}[k.Curve]
	}
	if got != string(alg) {
		t.Errorf("%s: key %s, want %s", name, got, alg)
	}
}

// checkModes checks kubeadm's modes: keys 0600, certificates 0644,
// sa.pub 0600, folders 0755.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		switch {
		case e.IsDir():
			want = 0o755 | os.ModeDir
		case strings.HasSuffix(p, ".crt"):
			want = 0o644
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSANHelpers(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		local    bool
		want     string
	}{
		{"", false, "https://192.168.1.10:6443"},
		{"lb.example.com", false, "https://lb.example.com:6443"},
		{"lb.example.com:443", false, "https://lb.example.com:443"},
		{"lb.example.com:443", true, "https://192.168.1.10:6443"},
		{"[fd00::1]:443", false, "https://[fd00::1]:443"},
		{"lb.example.com:", false, "https://lb.example.com:6443"},
		{"[FD00::1]:", false, "https://[FD00::1]:6443"},
	} {
		cfg := testConfig(func(c *kubeadm.InitConfiguration) { c.ControlPlaneEndpoint = tt.endpoint })
		got, err := APIServerURL(cfg, tt.local)
		if err != nil || got != tt.want {
			t.Errorf("APIServerURL(%q, %v) = %q, %v; want %q", tt.endpoint, tt.local, got, err, tt.want)
		}
	}
	bad := testConfig(func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.AdvertiseAddress = "nope" })
	if _, err := APIServerSANs(bad); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a bad advertise address: %v", err)
	}
	bad = testConfig(func(c *kubeadm.InitConfiguration) { c.Networking.ServiceSubnet = "x" })
	if _, err := APIServerSANs(bad); err == nil {
		t.Error("a bad service subnet must fail")
	}
	// IP SANs compare as addresses, DNS names without case.
	alt, err := APIServerSANs(testConfig(func(c *kubeadm.InitConfiguration) {
		c.APIServer.CertSANs = []string{"::ffff:192.168.1.10", "NODE1"}
	}))
	if err != nil || len(alt.IPs) != 2 || len(alt.DNSNames) != 5 {
		t.Errorf("duplicates kept: %v %v (%v)", alt.DNSNames, alt.IPs, err)
	}
}
