package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unavailable skips the test for a missing prerequisite, or fails it when
// KUBEADM_INTEGRATION=1 asks for the integration tests to run for sure.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(IntegrationEnv) == "1" {
		t.Fatalf("control plane unavailable with %s=1: %s", IntegrationEnv, msg)
	}
	t.Skipf("control plane unavailable, skipping (set %s=1 to make this a failure): %s", IntegrationEnv, msg)
}

// checkPrerequisites skips or fails the test unless this process is root,
// nsenter and ip exist, and every component's binary is built.
func checkPrerequisites(t testing.TB, upstreamDir string, components []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "needs root (network namespaces, kubeadm --rootfs)")
	}
	for _, tool := range []string{"nsenter", "ip", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s not found: %v", tool, err)
		}
	}
	var missing []string
	for _, c := range components {
		if _, err := os.Stat(upstreamBinary(upstreamDir, c)); err != nil {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		unavailable(t, "upstream binaries not built under %s: %s; run hack/build-upstream.sh %s",
			upstreamDir, strings.Join(missing, ", "), strings.Join(components, " "))
	}
}

// upstreamBinary is where hack/build-upstream.sh puts a component.
func upstreamBinary(upstreamDir, name string) string {
	if name == "etcd" {
		return filepath.Join(upstreamDir, "etcd-"+EtcdVersion, "etcd")
	}
	return filepath.Join(upstreamDir, KubernetesVersion, name)
}

// buildKubeadm builds our kubeadm into dir.
func buildKubeadm(t testing.TB, repo, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "kubeadm")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/kubeadm")
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building our kubeadm: %v\n%s", err, b)
	}
	return out
}
