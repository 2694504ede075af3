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

// SuitePrograms are upstream's test programs of a Kubernetes version,
// built by hack/build-upstream.sh into UpstreamDir: kubeadm's e2e suite,
// the Kubernetes e2e suite (whose [Conformance] specs "make conformance"
// runs), the ginkgo CLI that runs the latter in parallel, and the programs
// of the test images built from Kubernetes' own sources.
var SuitePrograms = []string{"e2e_kubeadm.test", "e2e.test", "ginkgo", "agnhost", "nonewprivs", "sample-apiserver"}

// MissingSuites lists the SuitePrograms of version that are not built.
func MissingSuites(repo, version string) []string {
	var missing []string
	for _, b := range SuitePrograms {
		if _, err := os.Stat(filepath.Join(UpstreamDir(repo, version), b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// BuildSuites builds the missing SuitePrograms of version (minutes the
// first time: e2e.test alone is about three).
func BuildSuites(ctx context.Context, repo, version string, out io.Writer) error {
	missing := MissingSuites(repo, version)
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

// SuiteProgram is the path of one of SuitePrograms of t's version.
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
