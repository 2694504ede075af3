package earlykey

import (
	"strings"
	"testing"
)

func TestMakesKeys(t *testing.T) {
	for _, tc := range []struct {
		args string
		want bool
	}{
		{"init", true},
		{"init --config /c.yaml", true},
		{"init --dry-run", true},
		{"init phase certs all --config /c.yaml --rootfs /tmp/x", true},
		{"init phase certs ca", true},
		{"init phase kubeconfig all", true},
		{"init phase etcd local", false},
		{"init phase control-plane all", false},
		{"init phase preflight", false},
		{"init --help", false},
		{"init phase certs all -h", false},
		{"join 10.0.0.1:6443 --token x --control-plane", true},
		{"join 10.0.0.1:6443 --token x --control-plane=true", true},
		{"join 10.0.0.1:6443 --token x", false},
		{"kubeconfig user --client-name bob", true},
		{"certs generate-csr --kubeconfig-dir /x", true},
		{"certs renew all", false},
		{"certs check-expiration", false},
		{"version", false},
		{"token create", false},
		{"reset -f", false},
		{"", false},
	} {
		var args []string
		if tc.args != "" {
			args = strings.Fields(tc.args)
		}
		if got := makesKeys(args); got != tc.want {
			t.Errorf("makesKeys(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestTakeWithoutKey: in a test binary no key is started at init, and
// Take says so at once.
func TestTakeWithoutKey(t *testing.T) {
	if k, ok := Take(); ok || k != nil {
		t.Errorf("Take = %v, %v; want none", k, ok)
	}
}
