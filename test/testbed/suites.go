package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KubeadmSuitePrograms are the upstream test programs TestKubeadmSuite
// runs, in CI too: kubeadm's e2e suite.
var KubeadmSuitePrograms = []string{"e2e_kubeadm.test"}

// ConformancePrograms are the upstream test programs TestConformance
// runs ("make conformance"): the Kubernetes e2e suite, the ginkgo CLI that
// runs it in parallel, and the programs of the test images built from
// Kubernetes' own sources. They take minutes more to build than
// KubeadmSuitePrograms (e2e.test alone about five).
var ConformancePrograms = []string{"e2e.test", "ginkgo", "agnhost", "nonewprivs", "sample-apiserver"}

// MissingSuites lists the programs (of KubeadmSuitePrograms and
// ConformancePrograms) of version that are not built into UpstreamDir.
func MissingSuites(repo, version string, programs []string) []string {
	var missing []string
	for _, b := range programs {
		if _, err := os.Stat(filepath.Join(UpstreamDir(repo, version), b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// BuildSuites builds those of programs of version that are missing, with
// hack/build-upstream.sh (minutes the first time).
func BuildSuites(ctx context.Context, repo, version string, programs []string, out io.Writer) error {
	missing := MissingSuites(repo, version, programs)
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(out, "[testbed] building upstream's test programs of %s: %s (minutes the first time)\n", version, strings.Join(missing, " "))
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "hack", "build-upstream.sh"), missing...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "K8S_VERSION="+version)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/build-upstream.sh: %w", err)
	}
	return nil
}

// SuiteProgram is the path of one of KubeadmSuitePrograms or
// ConformancePrograms of t's version.
func (t *Toolchain) SuiteProgram(name string) string {
	return filepath.Join(UpstreamDir(t.Repo, t.KubernetesVersion), name)
}

// suiteSources is the folder of the k8s.io/kubernetes module of t's
// version in the module cache (the test images' data files are there),
// as the suites' wrapper module resolves it.
func (t *Toolchain) suiteSources(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(t.Repo, ".cache", "upstream", "e2e-wrapper-"+t.KubernetesVersion)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding k8s.io/kubernetes %s in the module cache: %w: %s", t.KubernetesVersion, err, stderr.Bytes())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("k8s.io/kubernetes %s is not in the module cache", t.KubernetesVersion)
	}
	return dir, nil
}
