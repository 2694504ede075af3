package preflight

import (
	"context"
	"fmt"
	"strings"
	"sync"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/version"
)

// kubeletSkew is how many minor versions the kubelet may lag behind this
// kubeadm.
const kubeletSkew = 3

// KubernetesVersion warns when the control plane is of a newer minor
// release than this kubeadm.
func KubernetesVersion(controlPlane string) Check {
	return Check{Name: "KubernetesVersion", Run: func(context.Context) Result {
		cp, err := utilversion.ParseSemantic(controlPlane)
		if err != nil {
			return fail("cannot parse the Kubernetes version %q: %v", controlPlane, err)
		}
		own := version.MustParse(version.KubernetesVersion)
		if cp.Major() > own.Major() || (cp.Major() == own.Major() && cp.Minor() > own.Minor()) {
			return warn("the control plane version %s is newer than this kubeadm (%d.%d.x); consider upgrading kubeadm",
				strings.TrimPrefix(controlPlane, "v"), own.Major(), own.Minor())
		}
		return Result{}
	}}
}

// KubeletVersionFunc reports the version of the kubelet installed on the
// host.
type KubeletVersionFunc func(ctx context.Context) (*utilversion.Version, error)

// InstalledKubelet asks the host's kubelet for its version once, on the
// first call, and gives every later call the same answer. The checks of
// one run share it: the kubelet is a large program, and starting it twice
// at the same time costs preflight a noticeable part of its run.
func InstalledKubelet(h Host) KubeletVersionFunc {
	var (
		once sync.Once
		v    *utilversion.Version
		err  error
	)
	return func(ctx context.Context) (*utilversion.Version, error) {
		once.Do(func() { v, err = kubeletVersion(ctx, h) })
		return v, err
	}
}

// kubeletVersion runs "kubelet --version" and parses its answer,
// "Kubernetes v1.36.3".
func kubeletVersion(ctx context.Context, h Host) (*utilversion.Version, error) {
	out, err := h.Command(ctx, "kubelet", "--version")
	if err != nil {
		return nil, fmt.Errorf("cannot determine the kubelet version: running 'kubelet --version': %w", err)
	}
	text := strings.TrimSpace(string(out))
	fields := strings.Fields(text)
	if len(fields) == 2 && fields[0] == "Kubernetes" {
		if v, err := utilversion.ParseSemantic(fields[1]); err == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("cannot determine the kubelet version: 'kubelet --version' printed %q", text)
}

// minKubeletVersion is the oldest kubelet this kubeadm supports.
func minKubeletVersion() *utilversion.Version {
	own := version.MustParse(version.KubernetesVersion)
	minor := own.Minor()
	if minor >= kubeletSkew {
		minor -= kubeletSkew
	}
	return utilversion.MustParseSemantic(fmt.Sprintf("v%d.%d.0", own.Major(), minor))
}

// KubeletVersion fails when the installed kubelet is older than this
// kubeadm supports or of a newer minor release than the control plane.
func KubeletVersion(kubelet KubeletVersionFunc, controlPlane string) Check {
	return Check{Name: "KubeletVersion", Run: func(ctx context.Context) Result {
		kv, err := kubelet(ctx)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		if min := minKubeletVersion(); kv.LessThan(min) {
			return fail("the kubelet version %q is older than this kubeadm supports (%d.%d or newer); upgrade the kubelet",
				strings.TrimPrefix(kv.String(), "v"), min.Major(), min.Minor())
		}
		cp, err := utilversion.ParseSemantic(controlPlane)
		if err != nil {
			return fail("cannot parse the Kubernetes version %q: %v", controlPlane, err)
		}
		if kv.Major() > cp.Major() || (kv.Major() == cp.Major() && kv.Minor() > cp.Minor()) {
			return fail("the kubelet (%q) is of a newer minor release than the control plane (%q); this version skew is not supported",
				kv.String(), cp.String())
		}
		return Result{}
	}}
}
