package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// silentServer starts a TLS server that completes the handshake and never
// answers a request, until the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-done }))
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv.URL
}

// clientMakers returns every way this package makes a client, each
// making one of the server of kc with requestTimeout.
func clientMakers(t *testing.T, kc *clientcmdapi.Config, requestTimeout time.Duration) map[string]func() (kubernetes.Interface, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.conf")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return map[string]func() (kubernetes.Interface, error){
		"FromKubeconfig": func() (kubernetes.Interface, error) {
			c, _, err := FromKubeconfig(path, requestTimeout)
			return c, err
		},
		"FromKubeconfigAt": func() (kubernetes.Interface, error) {
			return FromKubeconfigAt(path, kc.Clusters["c"].Server, requestTimeout)
		},
		"FromConfig": func() (kubernetes.Interface, error) { return FromConfig(kc, requestTimeout) },
		"FromRESTConfig": func() (kubernetes.Interface, error) {
			cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
			if err != nil {
				return nil, err
			}
			return FromRESTConfig(cfg, requestTimeout)
		},
	}
}

func kubeconfigOf(server string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "not-a-real-credential"}
	kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "ctx"
	return kc
}

// TestClientsGiveUpOnASilentServer: every client this package makes
// bounds each request by its request timeout, also a request whose
// context has no deadline at all (ServerVersion has no context).
func TestClientsGiveUpOnASilentServer(t *testing.T) {
	const timeout = 200 * time.Millisecond
	makers := clientMakers(t, kubeconfigOf(silentServer(t)), timeout)
	calls := map[string]func(kubernetes.Interface) error{
		"Get": func(c kubernetes.Interface) error {
			_, err := c.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubeadm-config", metav1.GetOptions{})
			return err
		},
		"ServerVersion": func(c kubernetes.Interface) error {
			_, err := c.Discovery().ServerVersion()
			return err
		},
	}
	for mname, newClient := range makers {
		for cname, call := range calls {
			t.Run(mname+"/"+cname, func(t *testing.T) {
				c, err := newClient()
				if err != nil {
					t.Fatal(err)
				}
				res := make(chan error, 1)
				began := time.Now()
				go func() { res <- call(c) }()
				select {
				case err := <-res:
					if err == nil {
						t.Fatal("a silent server answered")
					}
					if took := time.Since(began); took > 20*timeout {
						t.Errorf("gave up after %v; the request timeout is %v", took, timeout)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("still waiting after 30s")
				}
			})
		}
	}
}

func TestRequestTimeout(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{
		{0, v1beta4.DefaultKubernetesAPICall},
		{-time.Second, v1beta4.DefaultKubernetesAPICall},
		{5 * time.Second, 5 * time.Second},
	} {
		if got := RequestTimeout(tt.in); got != tt.want {
			t.Errorf("RequestTimeout(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestRetryWriteStopsAtAClientTimeout: a write the client stopped waiting
// for is not tried again (the server had the whole request timeout), while
// other transient failures are.
func TestRetryWriteStopsAtAClientTimeout(t *testing.T) {
	timeoutErr := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"context deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), 1},
		{"network timeout", timeoutErr, 1},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, writeAttempts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := RetryWrite(context.Background(), func() error { n++; return tt.err })
			if !errors.Is(err, tt.err) || n != tt.want {
				t.Errorf("%d attempts (want %d), error %v", n, tt.want, err)
			}
		})
	}
}
