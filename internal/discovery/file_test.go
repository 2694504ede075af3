package discovery

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// discoveryFile returns a kubeconfig whose current context uses cluster
// "given" at the fake server, with the CA in caPEM and, when userToken is
// set, user "joiner" holding that token.
func discoveryFile(f *fakeAPI, caPEM []byte, userToken string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["given"] = &clientcmdapi.Cluster{Server: "https://" + f.endpoint(), CertificateAuthorityData: caPEM}
	cfg.Contexts["join"] = &clientcmdapi.Context{Cluster: "given"}
	if userToken != "" {
		cfg.AuthInfos["joiner"] = &clientcmdapi.AuthInfo{Token: userToken}
		cfg.Contexts["join"].AuthInfo = "joiner"
	}
	cfg.CurrentContext = "join"
	return cfg
}

func writeKubeconfig(t *testing.T, cfg *clientcmdapi.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "discovery.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// refreshedCluster is what the fake cluster-info holds in the file tests:
// another server, and a CA bundle with the server's certificate first.
func refreshedClusterInfo(t *testing.T, f *fakeAPI) (func(int) (int, any), []byte) {
	otherPEM, _ := otherCA(t)
	bundle := append(append([]byte{}, f.caPEM...), otherPEM...)
	cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, bundle), nil)
	return func(int) (int, any) { return 200, cm }, bundle
}

func TestFileDiscoveryRefreshesFromClusterInfo(t *testing.T) {
	f := newFakeAPI(t, nil)
	var bundle []byte
	f.respond, bundle = refreshedClusterInfo(t, f)

	// The CA is named by a path relative to the file.
	cfg := discoveryFile(f, nil, "")
	cfg.Clusters["given"].CertificateAuthority = "ca.crt"
	path := writeKubeconfig(t, cfg)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "ca.crt"), f.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.discoverer(t, newFakeClock()).File(context.Background(), path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Clusters["given"]
	if c.Server != discoveredServer || string(c.CertificateAuthorityData) != string(bundle) || c.CertificateAuthority != "" {
		t.Errorf("cluster %+v, want cluster-info's server and CA", c)
	}
	if got.CurrentContext != "join" || got.Contexts["join"].Cluster != "given" || HasCredentials(got) {
		t.Errorf("kubeconfig %+v, want the file's context and no credential", got)
	}
	for _, r := range f.requests() {
		if r.method != "GET" || r.path != clusterInfoP || r.auth != "" {
			t.Errorf("request %+v, want an anonymous GET of cluster-info", r)
		}
	}
}

func TestFileDiscoveryKeepsCredential(t *testing.T) {
	f := newFakeAPI(t, nil)
	f.respond, _ = refreshedClusterInfo(t, f)
	got, err := f.discoverer(t, newFakeClock()).File(context.Background(), writeKubeconfig(t, discoveryFile(f, f.caPEM, fileToken)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !HasCredentials(got) || got.AuthInfos["joiner"].Token != fileToken || got.Clusters["given"].Server != discoveredServer {
		t.Errorf("kubeconfig %+v, want the file's user and cluster-info's server", got)
	}
	// The credential is trusted with the refresh, since the server is
	// verified by the file's CA.
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].auth != "Bearer "+fileToken {
		t.Errorf("requests %+v, want one with the file's token", reqs)
	}
}

// Without a usable cluster-info the file is used as it is.
func TestFileDiscoveryWithoutClusterInfo(t *testing.T) {
	for name, respond := range map[string]func(int) (int, any){
		"missing":   func(int) (int, any) { return status(404, metav1.StatusReasonNotFound) },
		"forbidden": func(int) (int, any) { return status(403, metav1.StatusReasonForbidden) },
		"no kubeconfig in it": func(int) (int, any) {
			cm := clusterInfo(t, "", nil)
			delete(cm.Data, "kubeconfig")
			return 200, cm
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t, respond)
			got, err := f.discoverer(t, newFakeClock()).File(context.Background(), writeKubeconfig(t, discoveryFile(f, f.caPEM, "")), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if c := got.Clusters["given"]; c.Server != "https://"+f.endpoint() || string(c.CertificateAuthorityData) != string(f.caPEM) {
				t.Errorf("cluster %+v, want the file's", c)
			}
			if n := f.clusterInfoReads(); n != 1 {
				t.Errorf("%d reads of cluster-info, want 1", n)
			}
		})
	}
}

func TestFileDiscoveryHTTPS(t *testing.T) {
	f := newFakeAPI(t, nil)
	f.respond, _ = refreshedClusterInfo(t, f)
	data, err := clientcmd.Write(*discoveryFile(f, f.caPEM, ""))
	if err != nil {
		t.Fatal(err)
	}
	f.files["/discovery.conf"] = data
	url := "https://" + f.endpoint() + "/discovery.conf"
	pool := x509.NewCertPool()
	pool.AddCert(f.srv.Certificate())

	d := f.discoverer(t, newFakeClock())
	d.RootCAs = pool
	got, err := d.File(context.Background(), url, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got.Clusters["given"].Server != discoveredServer {
		t.Errorf("cluster %+v, want cluster-info's server", got.Clusters["given"])
	}

	// The system's CAs do not know the test server.
	d.RootCAs = nil
	if _, err := d.File(context.Background(), url, time.Minute); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("fetching with the system's CAs: %v, want a certificate error", err)
	}
	d.RootCAs = pool
	if _, err := d.File(context.Background(), "https://"+f.endpoint()+"/nothing-here", time.Minute); err == nil || !strings.Contains(err.Error(), "HTTP status 418") {
		t.Errorf("fetching a missing file: %v", err)
	}
}

func TestFileDiscoveryFailures(t *testing.T) {
	otherPEM, _ := otherCA(t)
	tests := []struct {
		name      string
		location  func(t *testing.T, f *fakeAPI) string
		wantErr   error
		wantText  []string
		wantReads int
	}{{
		name: "the server's certificate is not from the file's CA",
		location: func(t *testing.T, f *fakeAPI) string {
			return writeKubeconfig(t, discoveryFile(f, otherPEM, fileToken))
		},
		wantErr: ErrUntrustedServer,
	}, {
		name: "the server does not answer",
		location: func(t *testing.T, f *fakeAPI) string {
			cfg := discoveryFile(f, f.caPEM, "")
			f.srv.Close()
			return writeKubeconfig(t, cfg)
		},
		wantErr:  ErrUnreachable,
		wantText: []string{"gave up after 1m0s"},
	}, {
		name: "no CA",
		location: func(t *testing.T, f *fakeAPI) string {
			return writeKubeconfig(t, discoveryFile(f, nil, ""))
		},
		wantText: []string{`the cluster "given" has no CA certificate`},
	}, {
		name: "no such file",
		location: func(t *testing.T, f *fakeAPI) string {
			return filepath.Join(t.TempDir(), "absent.conf")
		},
		wantText: []string{"absent.conf"},
	}, {
		name:     "plain http",
		location: func(t *testing.T, f *fakeAPI) string { return "http://" + f.endpoint() + "/discovery.conf" },
		wantText: []string{"must use https"},
	}, {
		name: "current context missing",
		location: func(t *testing.T, f *fakeAPI) string {
			cfg := discoveryFile(f, f.caPEM, "")
			cfg.CurrentContext = "elsewhere"
			return writeKubeconfig(t, cfg)
		},
		wantText: []string{`"elsewhere" does not exist`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, func(int) (int, any) { return status(404, metav1.StatusReasonNotFound) })
			_, err := f.discoverer(t, newFakeClock()).File(context.Background(), tt.location(t, f), time.Minute)
			if err == nil {
				t.Fatal("discovery succeeded")
			}
			t.Logf("error: %v", err)
			noSecret(t, "the error", err.Error())
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %q", err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if n := f.clusterInfoReads(); n != tt.wantReads {
				t.Errorf("%d reads of cluster-info, want %d", n, tt.wantReads)
			}
		})
	}
}

func TestTLSBootstrapConfig(t *testing.T) {
	f := newFakeAPI(t, nil)
	signed := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret})
	f.respond = func(int) (int, any) { return 200, signed }
	withCredential := writeKubeconfig(t, discoveryFile(f, f.caPEM, fileToken))
	without := writeKubeconfig(t, discoveryFile(f, f.caPEM, ""))
	tokenDiscovery := func(tls string) kubeadm.Discovery {
		return kubeadm.Discovery{
			BootstrapToken:    &kubeadm.BootstrapTokenDiscovery{Token: token, APIServerEndpoint: f.endpoint(), CACertHashes: []string{f.pin()}},
			TLSBootstrapToken: tls,
		}
	}
	fileDiscovery := func(path, tls string) kubeadm.Discovery {
		return kubeadm.Discovery{File: &kubeadm.FileDiscovery{KubeConfigPath: path}, TLSBootstrapToken: tls}
	}

	tests := []struct {
		name      string
		discovery kubeadm.Discovery
		wantUser  string // user of the current context
		wantToken string
		wantErr   string
	}{
		{"token discovery, same token", tokenDiscovery(token), BootstrapUser, token, ""},
		{"token discovery, no TLS bootstrap token", tokenDiscovery(""), BootstrapUser, token, ""},
		{"token discovery, another TLS bootstrap token", tokenDiscovery(tlsToken), BootstrapUser, tlsToken, ""},
		{"file with a credential", fileDiscovery(withCredential, ""), "joiner", fileToken, ""},
		{"file with a credential and a TLS bootstrap token", fileDiscovery(withCredential, tlsToken), BootstrapUser, tlsToken, ""},
		{"file without a credential, TLS bootstrap token", fileDiscovery(without, tlsToken), BootstrapUser, tlsToken, ""},
		{"file without any credential", fileDiscovery(without, ""), "", "", "carries no credential"},
		{"malformed TLS bootstrap token", fileDiscovery(without, "tls456:"+tlsSecret), "", "", "TLS bootstrap token is not of the form"},
		{"no discovery", kubeadm.Discovery{}, "", "", "names no discovery"},
		{"both", kubeadm.Discovery{BootstrapToken: tokenDiscovery("").BootstrapToken, File: &kubeadm.FileDiscovery{KubeConfigPath: without}}, "", "", "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.discoverer(t, newFakeClock()).TLSBootstrapConfig(context.Background(), &kubeadm.JoinConfiguration{Discovery: tt.discovery})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				noSecret(t, "the error", err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := got.Contexts[got.CurrentContext]
			if ctx == nil || ctx.AuthInfo != tt.wantUser || got.AuthInfos[tt.wantUser].Token != tt.wantToken {
				t.Errorf("kubeconfig %+v, want user %s with token %s", got, tt.wantUser, tt.wantToken)
			}
			if c := got.Clusters[ctx.Cluster]; c == nil || c.Server != discoveredServer || string(c.CertificateAuthorityData) != string(f.caPEM) {
				t.Errorf("cluster %+v, want cluster-info's", c)
			}
		})
	}
}

func TestTLSBootstrapConfigTimeout(t *testing.T) {
	f := newFakeAPI(t, func(int) (int, any) { return status(404, metav1.StatusReasonNotFound) })
	cfg := &kubeadm.JoinConfiguration{
		Discovery: kubeadm.Discovery{BootstrapToken: &kubeadm.BootstrapTokenDiscovery{Token: token, APIServerEndpoint: f.endpoint(), UnsafeSkipCAVerification: true}},
		Timeouts:  &kubeadm.Timeouts{Discovery: &metav1.Duration{Duration: 7 * time.Second}},
	}
	_, err := f.discoverer(t, newFakeClock()).TLSBootstrapConfig(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "gave up after 7s") {
		t.Errorf("error %v, want it to give up after 7s", err)
	}
	cfg.Timeouts = nil
	_, err = f.discoverer(t, newFakeClock()).TLSBootstrapConfig(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "gave up after 5m0s") {
		t.Errorf("error %v, want it to give up after the default 5m0s", err)
	}
}
