package kubeadm

import (
	"testing"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func TestKeyAlgorithm(t *testing.T) {
	for name, c := range map[string]struct {
		field EncryptionAlgorithmType
		gates map[string]bool
		want  EncryptionAlgorithmType
	}{
		"the field":          {v1beta4.EncryptionAlgorithmRSA3072, nil, v1beta4.EncryptionAlgorithmRSA3072},
		"gate off":           {v1beta4.EncryptionAlgorithmRSA3072, map[string]bool{"PublicKeysECDSA": false}, v1beta4.EncryptionAlgorithmRSA3072},
		"gate on wins":       {v1beta4.EncryptionAlgorithmRSA3072, map[string]bool{"PublicKeysECDSA": true}, v1beta4.EncryptionAlgorithmECDSAP256},
		"gate on, P-384 too": {v1beta4.EncryptionAlgorithmECDSAP384, map[string]bool{"PublicKeysECDSA": true}, v1beta4.EncryptionAlgorithmECDSAP256},
	} {
		cfg := ClusterConfiguration{EncryptionAlgorithm: c.field, FeatureGates: c.gates}
		if got := cfg.KeyAlgorithm(); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}
