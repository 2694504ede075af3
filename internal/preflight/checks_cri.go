package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/cri"
)

const (
	// pullAttempts is how often an image pull is tried before it counts as
	// failed.
	pullAttempts = cri.DefaultPullAttempts
	// pullParallelism bounds concurrent pulls when they are not serial.
	pullParallelism = cri.DefaultPullParallelism
)

// dialRuntime connects to the runtime with the error wording all CRI
// checks share.
func dialRuntime(ctx context.Context, h Host, endpoint string) (Runtime, error) {
	rt, err := h.DialCRI(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("could not connect to the container runtime: %w", err)
	}
	return rt, nil
}

// ContainerRuntime ("CRI") fails when the runtime does not answer or is
// not ready. A network that is not ready yet is fine: the CNI plugin comes
// later.
func ContainerRuntime(h Host, endpoint string) Check {
	return Check{Name: "CRI", Run: func(ctx context.Context) Result {
		rt, err := dialRuntime(ctx, h, endpoint)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		defer rt.Close()
		st, err := rt.Status(ctx, false)
		if err != nil {
			return fail("the container runtime is not running: %v", err)
		}
		for _, c := range st.Conditions {
			if c.Type == "RuntimeReady" {
				if !c.Status {
					return fail("the container runtime is not ready: condition %q is false (reason: %s, message: %s)", c.Type, c.Reason, c.Message)
				}
				return Result{}
			}
		}
		return fail("the container runtime does not report its %q condition", "RuntimeReady")
	}}
}

// ContainerRuntimeVersion checks that the runtime implements the
// RuntimeConfig call, which the kubelet will need to learn the cgroup
// driver. Lacking it is a warning for now.
func ContainerRuntimeVersion(h Host, endpoint string) Check {
	return Check{Name: "ContainerRuntimeVersion", Run: func(ctx context.Context) Result {
		rt, err := dialRuntime(ctx, h, endpoint)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		defer rt.Close()
		err = rt.RuntimeConfig(ctx)
		switch {
		case err == nil:
			return Result{}
		case isUnimplemented(err):
			return warn("the container runtime does not implement the CRI call RuntimeConfig; update it, since from Kubernetes 1.37 " +
				"the kubelet no longer falls back to the cgroupDriver of its own configuration " +
				"(see https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri)")
		default:
			return fail("could not ask the container runtime for its configuration (RuntimeConfig): %v", err)
		}
	}}
}

// ImagePullOptions say how ImagePull fetches images.
type ImagePullOptions struct {
	// Images to make present, in order.
	Images []string
	// Policy is Always, IfNotPresent (also when empty) or Never.
	Policy corev1.PullPolicy
	// Serial pulls one image at a time when true; otherwise a few at once.
	Serial bool
	// SandboxImage is the pause image kubeadm expects the runtime to use;
	// when the runtime names another one, Warnf is told. Empty skips the
	// comparison.
	SandboxImage string
	// Warnf receives notes that are not preflight warnings (it may be nil).
	Warnf func(format string, args ...any)
}

// ImagePull makes sure the images are in the container runtime: each is
// pulled unless the policy is IfNotPresent and it is there already; the
// policy Never pulls nothing. Every failed image is reported. Pulling an
// image that is present changes nothing, so the check may run again.
func ImagePull(h Host, endpoint string, o ImagePullOptions) Check {
	return Check{Name: "ImagePull", Run: func(ctx context.Context) Result {
		rt, err := dialRuntime(ctx, h, endpoint)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		defer rt.Close()
		if o.Policy == corev1.PullNever {
			return Result{}
		}
		if o.SandboxImage != "" && o.Warnf != nil {
			if img := runtimeSandboxImage(ctx, rt); img != "" && img != o.SandboxImage {
				o.Warnf("the container runtime uses the sandbox image %q, but kubeadm uses %q; consider configuring the runtime to use %q", img, o.SandboxImage, o.SandboxImage)
			}
		}
		errs := compact(cri.EnsureImages(ctx, rt, o.Images, cri.PullOptions{
			Policy:      o.Policy,
			Serial:      o.Serial,
			Parallelism: pullParallelism,
			Attempts:    pullAttempts,
		}))
		if o.Serial {
			return Result{Errors: errs}
		}
		// Parallel pulls finish in any order; one error lists them all.
		if len(errs) > 0 {
			return Result{Errors: []error{aggregate(errs)}}
		}
		return Result{}
	}}
}

// runtimeSandboxImage reads the sandbox image from the runtime's verbose
// status (containerd's "config" JSON); "" when it cannot tell.
func runtimeSandboxImage(ctx context.Context, rt Runtime) string {
	st, err := rt.Status(ctx, true)
	if err != nil || st.Info == nil {
		return ""
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if json.Unmarshal([]byte(st.Info["config"]), &cfg) != nil {
		return ""
	}
	return cfg.SandboxImage
}

// compact drops nil errors.
func compact(errs []error) []error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// aggregate joins several errors on one line, as "[a, b]"; a single error
// is shown as it is.
func aggregate(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return aggregateError(errs)
}

// aggregateError is several errors shown on one line.
type aggregateError []error

func (a aggregateError) Error() string {
	msgs := make([]string, len(a))
	for i, e := range a {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

func (a aggregateError) Unwrap() []error { return a }

// isUnimplemented tells whether err says the runtime lacks a call.
func isUnimplemented(err error) bool { return errors.Is(err, cri.ErrUnimplemented) }
