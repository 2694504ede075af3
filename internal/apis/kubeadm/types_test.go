package kubeadm

import (
	"testing"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// The removed PublicKeysECDSA gate no longer chooses the keys: only
// encryptionAlgorithm does.
func TestKeyAlgorithm(t *testing.T) {
	for _, alg := range []EncryptionAlgorithmType{v1beta4.EncryptionAlgorithmRSA3072, v1beta4.EncryptionAlgorithmECDSAP384} {
		cfg := ClusterConfiguration{EncryptionAlgorithm: alg, FeatureGates: map[string]bool{"PublicKeysECDSA": true}}
		if got := cfg.KeyAlgorithm(); got != alg {
			t.Errorf("KeyAlgorithm = %s, want %s", got, alg)
		}
	}
}
