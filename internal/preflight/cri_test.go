package preflight

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criServer is a minimal CRI runtime for the gRPC client.
type criServer struct {
	criv1.UnimplementedRuntimeServiceServer
	criv1.UnimplementedImageServiceServer
	noImageAPI bool
	pulled     []string
}

func (s *criServer) Version(context.Context, *criv1.VersionRequest) (*criv1.VersionResponse, error) {
	return &criv1.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, nil
}

func (s *criServer) ImageFsInfo(context.Context, *criv1.ImageFsInfoRequest) (*criv1.ImageFsInfoResponse, error) {
	if s.noImageAPI {
		return nil, status.Error(codes.Unimplemented, "no image service")
	}
	return &criv1.ImageFsInfoResponse{}, nil
}

func (s *criServer) Status(_ context.Context, r *criv1.StatusRequest) (*criv1.StatusResponse, error) {
	resp := &criv1.StatusResponse{Status: &criv1.RuntimeStatus{Conditions: []*criv1.RuntimeCondition{
		{Type: "RuntimeReady", Status: true},
		{Type: "NetworkReady", Status: false, Reason: "NetworkPluginNotReady"},
	}}}
	if r.Verbose {
		resp.Info = map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10.2"}`}
	}
	return resp, nil
}

func (s *criServer) ImageStatus(_ context.Context, r *criv1.ImageStatusRequest) (*criv1.ImageStatusResponse, error) {
	if r.Image.Image == "registry.k8s.io/pause:3.10.2" {
		return &criv1.ImageStatusResponse{Image: &criv1.Image{Id: "sha256:abc", Size: 1024}}, nil
	}
	return &criv1.ImageStatusResponse{}, nil
}

func (s *criServer) PullImage(_ context.Context, r *criv1.PullImageRequest) (*criv1.PullImageResponse, error) {
	if strings.Contains(r.Image.Image, "missing") {
		return nil, status.Error(codes.NotFound, "not found")
	}
	s.pulled = append(s.pulled, r.Image.Image)
	return &criv1.PullImageResponse{ImageRef: "sha256:def"}, nil
}

func serveCRI(t *testing.T, s *criServer) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	criv1.RegisterRuntimeServiceServer(g, s)
	criv1.RegisterImageServiceServer(g, s)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return "unix://" + sock
}

func TestDialCRI(t *testing.T) {
	ctx := context.Background()
	srv := &criServer{}
	endpoint := serveCRI(t, srv)

	rt, err := DialCRI(ctx, endpoint)
	if err != nil {
		t.Fatalf("DialCRI: %v", err)
	}
	defer rt.Close()
	st, err := rt.Status(ctx, true)
	if err != nil || len(st.Conditions) != 2 || !st.Conditions[0].Status || st.Info["config"] == "" {
		t.Errorf("Status = %+v, %v", st, err)
	}
	if err := rt.RuntimeConfig(ctx); !isUnimplemented(err) {
		t.Errorf("RuntimeConfig of a runtime without it = %v, want ErrUnimplemented", err)
	}
	if ok, err := rt.ImagePresent(ctx, "registry.k8s.io/pause:3.10.2"); !ok || err != nil {
		t.Errorf("ImagePresent(pause) = %v, %v", ok, err)
	}
	if ok, err := rt.ImagePresent(ctx, "registry.k8s.io/etcd:3.6.8-0"); ok || err != nil {
		t.Errorf("ImagePresent(etcd) = %v, %v", ok, err)
	}
	if err := rt.PullImage(ctx, "registry.k8s.io/etcd:3.6.8-0"); err != nil || len(srv.pulled) != 1 {
		t.Errorf("PullImage = %v, pulled %v", err, srv.pulled)
	}
	if err := rt.PullImage(ctx, "registry.k8s.io/missing:1"); err == nil || isUnimplemented(err) {
		t.Errorf("PullImage(missing) = %v", err)
	}

	// A bare socket path works too.
	rt2, err := DialCRI(ctx, strings.TrimPrefix(endpoint, "unix://"))
	if err != nil {
		t.Fatalf("DialCRI(path): %v", err)
	}
	rt2.Close()
}

func TestDialCRIFailures(t *testing.T) {
	ctx := context.Background()
	noImages := serveCRI(t, &criServer{noImageAPI: true})
	tests := []struct {
		endpoint string
		want     string
	}{
		{"unix://" + filepath.Join(t.TempDir(), "none.sock"), "the CRI v1 runtime API at"},
		{noImages, "the CRI v1 image API at"},
		{"tcp://127.0.0.1:1", "only unix:// sockets are supported"},
	}
	for _, tt := range tests {
		if _, err := DialCRI(ctx, tt.endpoint); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DialCRI(%s) = %v, want %q", tt.endpoint, err, tt.want)
		}
	}
}

func TestOSHostListenTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if err := NewHost().ListenTCP(port); err == nil {
		t.Errorf("ListenTCP(%d) of a held port succeeded", port)
	}
}
