package preflight

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/cri"
)

const testSocket = "unix:///var/run/containerd/containerd.sock"

func TestContainerRuntimeChecks(t *testing.T) {
	notReady := readyRuntime()
	notReady.status.Conditions[0] = RuntimeCondition{Type: "RuntimeReady", Status: false, Reason: "Starting", Message: "still starting"}
	silent := readyRuntime()
	silent.status.Conditions = nil
	broken := readyRuntime()
	broken.statusErr = errors.New("rpc error: code = Internal desc = status broken")
	old := readyRuntime()
	old.configErr = fmt.Errorf("%w: method RuntimeConfig not implemented", cri.ErrUnimplemented)
	failing := readyRuntime()
	failing.configErr = errors.New("rpc error: code = Internal desc = boom")

	runCases(t, []checkCase{
		{name: "ready, network not ready yet", check: ContainerRuntime(&fakeHost{runtime: readyRuntime()}, testSocket), wantName: "CRI"},
		{name: "no runtime", check: ContainerRuntime(&fakeHost{}, testSocket),
			wantErrs: []string{"could not connect to the container runtime: dial unix /var/run/containerd/containerd.sock"}},
		{name: "not ready", check: ContainerRuntime(&fakeHost{runtime: notReady}, testSocket),
			wantErrs: []string{`the container runtime is not ready: condition "RuntimeReady" is false (reason: Starting, message: still starting)`}},
		{name: "no condition", check: ContainerRuntime(&fakeHost{runtime: silent}, testSocket), wantErrs: []string{`does not report its "RuntimeReady" condition`}},
		{name: "status fails", check: ContainerRuntime(&fakeHost{runtime: broken}, testSocket),
			wantErrs: []string{"the container runtime is not running: rpc error: code = Internal desc = status broken"}},
		{name: "config answered", check: ContainerRuntimeVersion(&fakeHost{runtime: readyRuntime()}, testSocket), wantName: "ContainerRuntimeVersion"},
		{name: "config unimplemented", check: ContainerRuntimeVersion(&fakeHost{runtime: old}, testSocket),
			wantWarns: []string{"does not implement the CRI call RuntimeConfig"}},
		{name: "config fails", check: ContainerRuntimeVersion(&fakeHost{runtime: failing}, testSocket),
			wantErrs: []string{"could not ask the container runtime for its configuration (RuntimeConfig): rpc error: code = Internal desc = boom"}},
		{name: "version without runtime", check: ContainerRuntimeVersion(&fakeHost{}, testSocket), wantErrs: []string{"could not connect to the container runtime"}},
	})
}

var testImages = []string{
	"registry.k8s.io/kube-apiserver:v1.36.3",
	"registry.k8s.io/kube-controller-manager:v1.36.3",
	"registry.k8s.io/etcd:3.6.8-0",
	"registry.k8s.io/pause:3.10.2",
}

func TestImagePull(t *testing.T) {
	tests := []struct {
		name       string
		policy     corev1.PullPolicy
		serial     bool
		present    []string
		fails      map[string]int
		statusFail bool
		noRuntime  bool
		wantPulls  []string // sorted, with repeats for retries
		wantErrs   []string
	}{
		{
			name:      "if not present pulls the missing ones",
			policy:    corev1.PullIfNotPresent,
			serial:    true,
			present:   testImages[:2],
			wantPulls: []string{testImages[2], testImages[3]},
		},
		{
			name:      "empty policy means if not present",
			serial:    true,
			present:   testImages,
			wantPulls: nil,
		},
		{
			name:      "always pulls everything",
			policy:    corev1.PullAlways,
			serial:    true,
			present:   testImages,
			wantPulls: []string{testImages[0], testImages[1], testImages[2], testImages[3]},
		},
		{
			name:     "never pulls nothing, even when images are missing",
			policy:   corev1.PullNever,
			serial:   true,
			wantErrs: nil,
		},
		{
			name:       "a failed status query means pull",
			policy:     corev1.PullIfNotPresent,
			serial:     true,
			present:    testImages,
			statusFail: true,
			wantPulls:  []string{testImages[0], testImages[1], testImages[2], testImages[3]},
		},
		{
			name:      "a pull that fails twice is retried",
			policy:    corev1.PullIfNotPresent,
			serial:    true,
			present:   testImages[:3],
			fails:     map[string]int{testImages[3]: 2},
			wantPulls: []string{testImages[3], testImages[3], testImages[3]},
		},
		{
			name:      "serial: one error per image, in order",
			policy:    corev1.PullIfNotPresent,
			serial:    true,
			present:   testImages[:1],
			fails:     map[string]int{testImages[1]: -1, testImages[3]: -1},
			wantPulls: append(append(repeat(testImages[1], pullAttempts), testImages[2]), repeat(testImages[3], pullAttempts)...),
			wantErrs: []string{
				"failed to pull image registry.k8s.io/kube-controller-manager:v1.36.3: rpc error",
				"failed to pull image registry.k8s.io/pause:3.10.2: rpc error",
			},
		},
		{
			name:      "parallel: one error listing the images",
			policy:    corev1.PullIfNotPresent,
			present:   testImages[:1],
			fails:     map[string]int{testImages[1]: -1, testImages[3]: -1},
			wantPulls: append(append(repeat(testImages[1], pullAttempts), testImages[2]), repeat(testImages[3], pullAttempts)...),
			wantErrs: []string{
				"[failed to pull image registry.k8s.io/kube-controller-manager:v1.36.3: rpc error: code = NotFound desc = registry.k8s.io/kube-controller-manager:v1.36.3 not found, " +
					"failed to pull image registry.k8s.io/pause:3.10.2: rpc error: code = NotFound desc = registry.k8s.io/pause:3.10.2 not found]",
			},
		},
		{
			name:      "no runtime is an error",
			policy:    corev1.PullIfNotPresent,
			serial:    true,
			noRuntime: true,
			wantErrs:  []string{"could not connect to the container runtime"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := readyRuntime()
			rt.present = map[string]bool{}
			for _, img := range tt.present {
				rt.present[img] = true
			}
			rt.pullFails = map[string]int{}
			for img, n := range tt.fails {
				rt.pullFails[img] = n
			}
			rt.statusFails = tt.statusFail
			h := &fakeHost{runtime: rt}
			if tt.noRuntime {
				h.runtime = nil
			}
			c := ImagePull(h, testSocket, ImagePullOptions{Images: testImages, Policy: tt.policy, Serial: tt.serial})
			if c.Name != "ImagePull" {
				t.Errorf("name = %q", c.Name)
			}
			r := c.Run(context.Background())
			matchMessages(t, "errors", r.Errors, tt.wantErrs)
			if len(r.Warnings) > 0 {
				t.Errorf("warnings = %q", messages(r.Warnings))
			}
			want := append([]string(nil), tt.wantPulls...)
			sort.Strings(want)
			if got := rt.pulled(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("pulls = %q, want %q", got, want)
			}
		})
	}
}

func TestImagePullBoundsParallelism(t *testing.T) {
	var many []string
	for i := range 10 {
		many = append(many, fmt.Sprintf("registry.example/img%d:v1", i))
	}
	for _, serial := range []bool{true, false} {
		rt := readyRuntime()
		rt.pullDelay = 5 * time.Millisecond
		r := ImagePull(&fakeHost{runtime: rt}, testSocket, ImagePullOptions{Images: many, Policy: corev1.PullAlways, Serial: serial}).Run(context.Background())
		if len(r.Errors) > 0 {
			t.Fatalf("errors: %q", messages(r.Errors))
		}
		want := pullParallelism
		if serial {
			want = 1
		}
		if rt.max != want {
			t.Errorf("serial=%v: %d pulls at once, want %d", serial, rt.max, want)
		}
	}
}

func TestImagePullSandboxImage(t *testing.T) {
	tests := []struct {
		info     map[string]string
		wantNote string
	}{
		{map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.8"}`}, `uses the sandbox image "registry.k8s.io/pause:3.8", but kubeadm uses "registry.k8s.io/pause:3.10.2"`},
		{map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10.2"}`}, ""},
		{map[string]string{"config": `not json`}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		rt := readyRuntime()
		rt.status.Info = tt.info
		var notes []string
		warnf := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
		ImagePull(&fakeHost{runtime: rt}, testSocket, ImagePullOptions{
			Images: nil, Policy: corev1.PullIfNotPresent, Serial: true,
			SandboxImage: "registry.k8s.io/pause:3.10.2", Warnf: warnf,
		}).Run(context.Background())
		got := strings.Join(notes, "\n")
		if (tt.wantNote == "") != (got == "") || !strings.Contains(got, tt.wantNote) {
			t.Errorf("info %v: notes %q, want %q", tt.info, got, tt.wantNote)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
