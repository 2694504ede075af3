package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/discovery"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// A test-only token for discovery, and one that does not exist.
const (
	discID, discSecret = "disc01", "discoverys3cr3t0"
	discToken          = discID + "." + discSecret
	discWrongSecret    = "wr0ngs3cr3tqwxyz"
	discConfigPath     = "/discovery-token.yaml"
	// quickly bounds the failures that must not wait for the timeout.
	quickly = 5 * time.Second
)

// Token and file discovery against the real API server, with cluster-info
// signed by the controller manager's bootstrap signer.
func TestDiscovery(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	config := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ` + cp.AdvertiseAddress().String() + `
nodeRegistration:
  name: ` + controlplane.DefaultNodeName + `
bootstrapTokens:
- token: ` + discToken + `
  description: discovery test
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + controlplane.KubernetesVersion + `
`
	if err := os.WriteFile(cp.HostPath(discConfigPath), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// The token Secret, cluster-info (unsigned) and the RBAC that lets
	// anonymous users read it, as kubeadm init makes them.
	runOurs(t, cp, "init", "phase", "bootstrap-token", "--config", discConfigPath, "--skip-token-print")
	created := time.Now()

	ca, err := pki.LoadCert(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	pin := bootstraptoken.CACertHash(ca)
	endpoint := net.JoinHostPort(cp.AdvertiseAddress().String(), "6443")
	d := &discovery.Discoverer{
		DialContext: cp.DialContext,
		Interval:    250 * time.Millisecond,
		Logf: func(format string, args ...any) {
			t.Helper()
			t.Logf(format, args...)
		},
	}

	t.Run("the right pin", func(t *testing.T) {
		ctx := testContext(t, 90*time.Second)
		kc, err := d.Token(ctx, discovery.TokenOptions{Endpoint: endpoint, Token: discToken, CACertHashes: []string{pin}, Timeout: 60 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("discovery succeeded %v after the token and cluster-info were created", time.Since(created).Round(time.Millisecond))
		checkBootstrapKubeconfig(ctx, t, cp, kc, caPEM)
		checkSignedByControllerManager(ctx, t, cp)
	})

	t.Run("a pin of another key", func(t *testing.T) {
		wrong := "sha256:" + strings.Repeat("0", 64)
		began := time.Now()
		_, err := d.Token(testContext(t, 30*time.Second), discovery.TokenOptions{Endpoint: endpoint, Token: discToken, CACertHashes: []string{wrong}, Timeout: 60 * time.Second})
		checkQuickFailure(t, err, discovery.ErrPinMismatch, began, pin)
	})

	t.Run("the wrong token secret", func(t *testing.T) {
		began := time.Now()
		_, err := d.Token(testContext(t, 30*time.Second), discovery.TokenOptions{Endpoint: endpoint, Token: discID + "." + discWrongSecret, CACertHashes: []string{pin}, Timeout: 60 * time.Second})
		checkQuickFailure(t, err, discovery.ErrBadSignature, began, discID)
		if err != nil && strings.Contains(err.Error(), discWrongSecret) {
			t.Errorf("the error shows the token secret: %v", err)
		}
	})

	t.Run("a token ID the cluster does not know", func(t *testing.T) {
		began := time.Now()
		_, err := d.Token(testContext(t, 30*time.Second), discovery.TokenOptions{Endpoint: endpoint, Token: "nosuch.0123456789abcdef", CACertHashes: []string{pin}, Timeout: 2 * time.Second})
		if !errors.Is(err, discovery.ErrNotSigned) {
			t.Fatalf("error %v, want one wrapping %v", err, discovery.ErrNotSigned)
		}
		if took := time.Since(began); took > 2*time.Second+quickly {
			t.Errorf("gave up after %v with a timeout of 2s", took)
		}
	})

	t.Run("a discovery file and the TLS bootstrap token", func(t *testing.T) {
		ctx := testContext(t, 60*time.Second)
		// The cluster of admin.conf, with the CA by path and no user.
		file := clientcmdapi.NewConfig()
		file.Clusters["c"] = &clientcmdapi.Cluster{Server: cp.Endpoint(), CertificateAuthority: cp.CACertPath()}
		file.Contexts["c"] = &clientcmdapi.Context{Cluster: "c"}
		file.CurrentContext = "c"
		path := filepath.Join(t.TempDir(), "discovery.conf")
		if err := clientcmd.WriteToFile(*file, path); err != nil {
			t.Fatal(err)
		}
		kc, err := d.TLSBootstrapConfig(ctx, &kubeadm.JoinConfiguration{Discovery: kubeadm.Discovery{
			File:              &kubeadm.FileDiscovery{KubeConfigPath: path},
			TLSBootstrapToken: discToken,
		}})
		if err != nil {
			t.Fatal(err)
		}
		checkBootstrapKubeconfig(ctx, t, cp, kc, caPEM)
	})
}

// checkBootstrapKubeconfig checks the kubeconfig discovery returned: the
// API server and CA of cluster-info, and the token, with which it
// authenticates as the token's bootstrap user.
func checkBootstrapKubeconfig(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, kc *clientcmdapi.Config, caPEM []byte) {
	t.Helper()
	cluster := kc.Clusters[discovery.ClusterName]
	if cluster == nil || cluster.Server != cp.Endpoint() || string(cluster.CertificateAuthorityData) != string(caPEM) {
		t.Errorf("cluster %+v, want %s and ca.crt", cluster, cp.Endpoint())
	}
	if u := kc.AuthInfos[discovery.BootstrapUser]; u == nil || u.Token != discToken {
		t.Errorf("user %s missing or without the token", discovery.BootstrapUser)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dial = cp.DialContext
	cs, err := apiclient.FromRESTConfig(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if review := whoAmI(ctx, t, cs.Discovery().RESTClient()); review.Username != "system:bootstrap:"+discID {
		t.Errorf("the discovered kubeconfig authenticates as %q, want system:bootstrap:%s", review.Username, discID)
	}
}

// checkSignedByControllerManager checks that the signature discovery
// verified is the bootstrap signer's: kube-controller-manager owns the
// field, and it verifies with the token.
func checkSignedByControllerManager(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	cm, err := cp.Client().CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := bootstrapapi.JWSSignatureKeyPrefix + discID
	owner := ""
	for _, m := range cm.ManagedFields {
		if m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:`+key+`"`) {
			owner = m.Manager
		}
	}
	if owner != "kube-controller-manager" {
		t.Errorf("the field %s is managed by %q, want kube-controller-manager; managed fields %+v", key, owner, cm.ManagedFields)
	}
	if err := discovery.VerifySignature(cm.Data[key], []byte(cm.Data[bootstrapapi.KubeConfigKey]), discID, discSecret); err != nil {
		t.Errorf("the signer's signature: %v", err)
	}
}

// checkQuickFailure checks that err wraps want, names mention, and came
// long before the timeout.
func checkQuickFailure(t *testing.T, err, want error, began time.Time, mention string) {
	t.Helper()
	took := time.Since(began)
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %v", err, want)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), mention) {
		t.Errorf("error %q does not mention %s", err, mention)
	}
	if strings.Contains(err.Error(), discSecret) {
		t.Errorf("the error shows the token secret: %v", err)
	}
	if took > quickly {
		t.Errorf("failing took %v, want under %v", took, quickly)
	}
}
