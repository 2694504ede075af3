package cri_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/cri/critest"
)

const (
	pause = "registry.k8s.io/pause:3.10.2"
	etcd  = "registry.k8s.io/etcd:3.6.8-0"
)

func dial(t *testing.T, endpoint string) cri.Runtime {
	t.Helper()
	rt, err := cri.Dial(context.Background(), endpoint, cri.Options{})
	if err != nil {
		t.Fatalf("Dial(%s): %v", endpoint, err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestRuntimeCalls(t *testing.T) {
	ctx := context.Background()
	srv := &critest.Server{
		Present:         []string{pause},
		PullErrors:      map[string]error{"registry.k8s.io/missing:1": status.Error(codes.NotFound, "no such image")},
		Info:            map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10.2"}`},
		NoRuntimeConfig: true,
	}
	endpoint := critest.Start(t, srv)
	rt := dial(t, endpoint)

	if rt.Endpoint() != endpoint {
		t.Errorf("Endpoint = %q, want %q", rt.Endpoint(), endpoint)
	}
	v, err := rt.Version(ctx)
	if err != nil || v.RuntimeName != "fake" || v.RuntimeAPIVersion != "v1" {
		t.Errorf("Version = %+v, %v", v, err)
	}
	st, err := rt.Status(ctx, true)
	if err != nil || len(st.Conditions) != 2 || st.Conditions[0] != (cri.Condition{Type: "RuntimeReady", Status: true}) || st.Info["config"] == "" {
		t.Errorf("Status(verbose) = %+v, %v", st, err)
	}
	if st, err := rt.Status(ctx, false); err != nil || st.Info != nil {
		t.Errorf("Status = %+v, %v; want no info", st, err)
	}
	if err := rt.RuntimeConfig(ctx); !errors.Is(err, cri.ErrUnimplemented) {
		t.Errorf("RuntimeConfig of a runtime without it = %v, want ErrUnimplemented", err)
	}

	img, err := rt.ImageStatus(ctx, pause)
	if err != nil || img == nil || !strings.HasPrefix(img.ID, "sha256:") || !reflect.DeepEqual(img.RepoTags, []string{pause}) || img.Size == 0 {
		t.Errorf("ImageStatus(pause) = %+v, %v", img, err)
	}
	if img, err := rt.ImageStatus(ctx, etcd); img != nil || err != nil {
		t.Errorf("ImageStatus(etcd) = %+v, %v; want nil, nil", img, err)
	}
	if ok, err := rt.ImagePresent(ctx, pause); !ok || err != nil {
		t.Errorf("ImagePresent(pause) = %v, %v", ok, err)
	}
	if ok, err := rt.ImagePresent(ctx, etcd); ok || err != nil {
		t.Errorf("ImagePresent(etcd) = %v, %v", ok, err)
	}
	if err := rt.PullImage(ctx, etcd); err != nil || !srv.Has(etcd) {
		t.Errorf("PullImage(etcd) = %v; present afterwards: %v", err, srv.Has(etcd))
	}
	err = rt.PullImage(ctx, "registry.k8s.io/missing:1")
	if status.Code(err) != codes.NotFound || errors.Is(err, cri.ErrUnimplemented) {
		t.Errorf("PullImage(missing) = %v, want a NotFound status", err)
	}

	// A bare socket path works too.
	dial(t, strings.TrimPrefix(endpoint, "unix://"))
}

func TestSandboxesAndContainers(t *testing.T) {
	ctx := context.Background()
	kube := map[string]string{"io.kubernetes.pod.namespace": "kube-system"}
	srv := &critest.Server{
		Sandboxes: []*criv1.PodSandbox{
			{Id: "sb1", State: criv1.PodSandboxState_SANDBOX_READY, CreatedAt: 1e9,
				Metadata: &criv1.PodSandboxMetadata{Name: "etcd-node1", Namespace: "kube-system", Uid: "u1", Attempt: 2}, Labels: kube},
			{Id: "sb2", State: criv1.PodSandboxState_SANDBOX_NOTREADY,
				Metadata: &criv1.PodSandboxMetadata{Name: "web", Namespace: "default"}, Labels: map[string]string{"io.kubernetes.pod.namespace": "default"}},
		},
		Containers: []*criv1.Container{
			{Id: "c1", PodSandboxId: "sb1", State: criv1.ContainerState_CONTAINER_RUNNING, Labels: kube,
				Metadata: &criv1.ContainerMetadata{Name: "etcd", Attempt: 1}, Image: &criv1.ImageSpec{Image: etcd}},
			{Id: "c2", PodSandboxId: "sb2", State: criv1.ContainerState_CONTAINER_EXITED,
				Metadata: &criv1.ContainerMetadata{Name: "web"}},
		},
	}
	rt := dial(t, critest.Start(t, srv))

	all, err := rt.ListPodSandboxes(ctx, nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListPodSandboxes(all) = %+v, %v", all, err)
	}
	got, err := rt.ListPodSandboxes(ctx, kube)
	want := []cri.PodSandbox{{ID: "sb1", Name: "etcd-node1", Namespace: "kube-system", UID: "u1", Attempt: 2,
		Ready: true, Labels: kube, CreatedAt: time.Unix(1, 0)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ListPodSandboxes(kube-system) = %+v, %v\nwant %+v", got, err, want)
	}

	cs, err := rt.ListContainers(ctx, cri.ContainerFilter{PodSandboxID: "sb1"})
	if err != nil || len(cs) != 1 || cs[0].ID != "c1" || cs[0].Name != "etcd" || cs[0].Image != etcd ||
		cs[0].State != cri.ContainerRunning || cs[0].Attempt != 1 {
		t.Errorf("ListContainers(sb1) = %+v, %v", cs, err)
	}
	if cs, err := rt.ListContainers(ctx, cri.ContainerFilter{Labels: kube}); err != nil || len(cs) != 1 || cs[0].ID != "c1" {
		t.Errorf("ListContainers(labels) = %+v, %v", cs, err)
	}
	if cs, err := rt.ListContainers(ctx, cri.ContainerFilter{}); err != nil || len(cs) != 2 || cs[1].State != cri.ContainerExited {
		t.Errorf("ListContainers(all) = %+v, %v", cs, err)
	}

	for _, step := range []func() error{
		func() error { return rt.StopContainer(ctx, "c1", 10*time.Second) },
		func() error { return rt.RemoveContainer(ctx, "c1") },
		func() error { return rt.StopPodSandbox(ctx, "sb1") },
		func() error { return rt.RemovePodSandbox(ctx, "sb1") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	wantCalls := []string{"StopContainer c1", "RemoveContainer c1", "StopPodSandbox sb1", "RemovePodSandbox sb1"}
	if got := srv.Calls(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("calls = %q, want %q", got, wantCalls)
	}
	if left, _ := rt.ListPodSandboxes(ctx, nil); len(left) != 1 || left[0].ID != "sb2" {
		t.Errorf("sandboxes left = %+v", left)
	}
}

func TestDialFailures(t *testing.T) {
	ctx := context.Background()
	noImages := critest.Start(t, &critest.Server{NoImageAPI: true})
	missing := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	tests := []struct {
		name     string
		endpoint string
		want     []string
	}{
		{"no socket", missing, []string{"the CRI v1 runtime API at \"" + missing + "\" does not answer", "no such file or directory"}},
		{"nobody listening", critest.Stale(t), []string{"does not answer", "connection refused"}},
		{"no image API", noImages, []string{"the CRI v1 image API at"}},
		{"tcp", "tcp://127.0.0.1:1", []string{"only unix:// sockets are supported"}},
		{"windows pipe", "npipe:////./pipe/containerd-containerd", []string{"only unix:// sockets are supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := cri.Dial(ctx, tt.endpoint, cri.Options{})
			if err == nil {
				rt.Close()
				t.Fatalf("Dial(%s) succeeded", tt.endpoint)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Dial(%s) = %v, want %q in it", tt.endpoint, err, w)
				}
			}
		})
	}
}

func TestDialHungRuntimeTimesOut(t *testing.T) {
	start := time.Now()
	_, err := cri.Dial(context.Background(), critest.Silent(t), cri.Options{CallTimeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "does not answer") || status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
		t.Errorf("Dial of a silent socket = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial took %v despite a 200ms call timeout", d)
	}
}

func TestPullHonoursOnlyTheCallersContext(t *testing.T) {
	// The pull is held until two pulls run; with a call timeout far below
	// the hold, only a pull without that timeout can still succeed.
	srv := &critest.Server{HoldPulls: 2}
	rt, err := cri.Dial(context.Background(), critest.Start(t, srv), cri.Options{CallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	errs := make(chan error, 2)
	go func() { errs <- rt.PullImage(context.Background(), pause) }()
	go func() {
		// The first pull now waits well past the call timeout.
		time.Sleep(200 * time.Millisecond)
		errs <- rt.PullImage(context.Background(), etcd)
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("PullImage: %v", err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rt.PullImage(ctx, "registry.k8s.io/other:1"); status.Code(err) != codes.Canceled {
		t.Errorf("PullImage with a cancelled context = %v, want Canceled", err)
	}
}
