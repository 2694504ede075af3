package testbed

import (
	"strings"
	"testing"
)

// TestInitConfigNoDiskEviction checks that the test bed's kubelets neither
// evict for disk space nor collect images (InitConfig says why).
func TestInitConfigNoDiskEviction(t *testing.T) {
	cfg := InitConfig(&Node{Name: "node1", Index: 1}, KubernetesVersion, "")
	for _, want := range []string{
		"evictionHard:\n  imagefs.available: \"0%\"\n  nodefs.available: \"0%\"\n  nodefs.inodesFree: \"0%\"\n",
		"imageGCHighThresholdPercent: 100\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("InitConfig lacks %q:\n%s", want, cfg)
		}
	}
}
