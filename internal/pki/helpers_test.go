package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// fixedNow is the clock of every test.
func fixedNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

// testKeys hands out the pre-generated RSA-2048 keys of testdata, each
// once, so tests need not wait for RSA key generation. Other algorithms get
// real keys (ECDSA keys are cheap).
type testKeys struct {
	mu   sync.Mutex
	keys []crypto.Signer
	next int
}

func newTestKeys(t testing.TB) *testKeys {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rsa2048-keys.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k := &testKeys{}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		k.keys = append(k.keys, key)
	}
	return k
}

func (k *testKeys) gen(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
	if alg != "" && alg != v1beta4.EncryptionAlgorithmRSA2048 {
		return NewPrivateKey(alg)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.next >= len(k.keys) {
		return nil, fmt.Errorf("test ran out of pre-generated keys")
	}
	key := k.keys[k.next]
	k.next++
	return key, nil
}

func testOptions(t testing.TB) Options {
	return Options{Now: fixedNow, NewKey: newTestKeys(t).gen}
}

// testConfig is a defaulted configuration like kubeadm's, for node1 at
// 192.168.1.10, changed by muts.
func testConfig(muts ...func(*kubeadm.InitConfiguration)) *kubeadm.InitConfiguration {
	cfg := configtest.ControlPlaneNode()
	cfg.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmRSA2048
	cfg.CertificatesDir = "/etc/kubernetes/pki"
	for _, m := range muts {
		m(cfg)
	}
	return configtest.Parse(cfg)
}

func fileNames(m map[string]string) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// mustTree creates the whole tree of cfg in a new folder.
func mustTree(t testing.TB, cfg *kubeadm.InitConfiguration) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if _, _, err := EnsureAll(t.Context(), cfg, dir, testOptions(t), 2); err != nil {
		t.Fatal(err)
	}
	return dir
}
