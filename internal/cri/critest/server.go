package critest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// holdLimit is how long a held pull waits for the others before it fails.
const holdLimit = 5 * time.Second

// Server is a fake CRI runtime. Set the exported fields, then call Start;
// the fields must not change afterwards. The methods that report what
// happened are safe to call while the server runs.
type Server struct {
	criv1.UnimplementedRuntimeServiceServer
	criv1.UnimplementedImageServiceServer

	// Present lists the images the runtime has from the start.
	Present []string
	// PullErrors makes every pull of an image fail with its error (use
	// status.Error for a particular gRPC code).
	PullErrors map[string]error
	// StatusErrors makes the status query of an image fail.
	StatusErrors map[string]error
	// HoldPulls, when above 1, makes each pull wait until that many pulls
	// have started, so a test can prove that pulls overlap. A pull that
	// waits in vain fails after a few seconds.
	HoldPulls int
	// StopFailures makes the first n stops of a pod sandbox, by ID, fail.
	StopFailures map[string]int
	// Sandboxes and Containers are what the runtime runs from the start.
	Sandboxes  []*criv1.PodSandbox
	Containers []*criv1.Container
	// Info is the extra information of a verbose Status answer.
	Info map[string]string
	// NoImageAPI makes the image service answer Unimplemented, as a
	// runtime with only a runtime service would.
	NoImageAPI bool
	// NoRuntimeConfig makes RuntimeConfig answer Unimplemented.
	NoRuntimeConfig bool

	mu          sync.Mutex
	images      map[string]bool
	pulls       []string
	started     int
	inFlight    int
	maxInFlight int
	allStarted  chan struct{}
	calls       []string
	stopsFailed map[string]int
}

// Start serves s on a new socket in a temporary folder until the test ends
// and returns the socket's "unix://" endpoint.
func Start(t testing.TB, s *Server) string {
	t.Helper()
	s.images = map[string]bool{}
	for _, img := range s.Present {
		s.images[img] = true
	}
	s.allStarted = make(chan struct{})
	s.Sandboxes = slices.Clone(s.Sandboxes)
	s.Containers = slices.Clone(s.Containers)
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listening on %s: %v", sock, err)
	}
	g := grpc.NewServer()
	criv1.RegisterRuntimeServiceServer(g, s)
	criv1.RegisterImageServiceServer(g, s)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return "unix://" + sock
}

// Silent returns the endpoint of a socket that accepts connections but
// never answers, like a hung runtime.
func Silent(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "silent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listening on %s: %v", sock, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "unix://" + sock
}

// Stale returns the endpoint of a socket file nobody listens on, as a
// runtime that died leaves behind.
func Stale(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listening on %s: %v", sock, err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	return "unix://" + sock
}

// Pulls returns the images pulled (or tried), in the order the pulls
// started, with repeats for retries.
func (s *Server) Pulls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pulls)
}

// MaxInFlight is the largest number of pulls that ran at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// Has tells whether the runtime has image now.
func (s *Server) Has(image string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.images[image]
}

// Calls returns the sandbox and container calls that changed something,
// as "StopPodSandbox ID", "RemoveContainer ID" and so on, in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *Server) record(call, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call+" "+id)
}

// ---- runtime service ----

func (s *Server) Version(context.Context, *criv1.VersionRequest) (*criv1.VersionResponse, error) {
	return &criv1.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"}, nil
}

func (s *Server) Status(_ context.Context, r *criv1.StatusRequest) (*criv1.StatusResponse, error) {
	resp := &criv1.StatusResponse{Status: &criv1.RuntimeStatus{Conditions: []*criv1.RuntimeCondition{
		{Type: "RuntimeReady", Status: true},
		{Type: "NetworkReady", Status: false, Reason: "NetworkPluginNotReady", Message: "no CNI configuration"},
	}}}
	if r.GetVerbose() {
		resp.Info = s.Info
	}
	return resp, nil
}

func (s *Server) RuntimeConfig(context.Context, *criv1.RuntimeConfigRequest) (*criv1.RuntimeConfigResponse, error) {
	if s.NoRuntimeConfig {
		return nil, status.Error(codes.Unimplemented, "method RuntimeConfig not implemented")
	}
	return &criv1.RuntimeConfigResponse{Linux: &criv1.LinuxRuntimeConfiguration{CgroupDriver: criv1.CgroupDriver_SYSTEMD}}, nil
}

func (s *Server) ListPodSandbox(_ context.Context, r *criv1.ListPodSandboxRequest) (*criv1.ListPodSandboxResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := r.GetFilter()
	resp := &criv1.ListPodSandboxResponse{}
	for _, sb := range s.Sandboxes {
		if f.GetId() != "" && f.GetId() != sb.GetId() {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != sb.GetState() {
			continue
		}
		if !hasLabels(sb.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		resp.Items = append(resp.Items, sb)
	}
	return resp, nil
}

func (s *Server) StopPodSandbox(_ context.Context, r *criv1.StopPodSandboxRequest) (*criv1.StopPodSandboxResponse, error) {
	s.record("StopPodSandbox", r.GetPodSandboxId())
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := r.GetPodSandboxId(); s.stopsFailed[id] < s.StopFailures[id] {
		if s.stopsFailed == nil {
			s.stopsFailed = map[string]int{}
		}
		s.stopsFailed[id]++
		return nil, status.Errorf(codes.Unknown, "failed to stop container of sandbox %q: still starting", id)
	}
	for i, sb := range s.Sandboxes {
		if sb.GetId() == r.GetPodSandboxId() {
			// A new value, not a change in place: answers being sent may
			// still point at the old one.
			s.Sandboxes[i] = &criv1.PodSandbox{
				Id: sb.GetId(), Metadata: sb.GetMetadata(), State: criv1.PodSandboxState_SANDBOX_NOTREADY,
				CreatedAt: sb.GetCreatedAt(), Labels: sb.GetLabels(), Annotations: sb.GetAnnotations(),
			}
		}
	}
	return &criv1.StopPodSandboxResponse{}, nil
}

func (s *Server) RemovePodSandbox(_ context.Context, r *criv1.RemovePodSandboxRequest) (*criv1.RemovePodSandboxResponse, error) {
	s.record("RemovePodSandbox", r.GetPodSandboxId())
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.GetPodSandboxId()
	s.Sandboxes = slices.DeleteFunc(s.Sandboxes, func(sb *criv1.PodSandbox) bool { return sb.GetId() == id })
	s.Containers = slices.DeleteFunc(s.Containers, func(c *criv1.Container) bool { return c.GetPodSandboxId() == id })
	return &criv1.RemovePodSandboxResponse{}, nil
}

func (s *Server) ListContainers(_ context.Context, r *criv1.ListContainersRequest) (*criv1.ListContainersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := r.GetFilter()
	resp := &criv1.ListContainersResponse{}
	for _, c := range s.Containers {
		if f.GetId() != "" && f.GetId() != c.GetId() {
			continue
		}
		if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.GetPodSandboxId() {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != c.GetState() {
			continue
		}
		if !hasLabels(c.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		resp.Containers = append(resp.Containers, c)
	}
	return resp, nil
}

func (s *Server) StopContainer(_ context.Context, r *criv1.StopContainerRequest) (*criv1.StopContainerResponse, error) {
	s.record("StopContainer", r.GetContainerId())
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.Containers {
		if c.GetId() == r.GetContainerId() {
			s.Containers[i] = &criv1.Container{
				Id: c.GetId(), PodSandboxId: c.GetPodSandboxId(), Metadata: c.GetMetadata(), Image: c.GetImage(),
				ImageRef: c.GetImageRef(), State: criv1.ContainerState_CONTAINER_EXITED, CreatedAt: c.GetCreatedAt(),
				Labels: c.GetLabels(), Annotations: c.GetAnnotations(),
			}
		}
	}
	return &criv1.StopContainerResponse{}, nil
}

func (s *Server) RemoveContainer(_ context.Context, r *criv1.RemoveContainerRequest) (*criv1.RemoveContainerResponse, error) {
	s.record("RemoveContainer", r.GetContainerId())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Containers = slices.DeleteFunc(s.Containers, func(c *criv1.Container) bool { return c.GetId() == r.GetContainerId() })
	return &criv1.RemoveContainerResponse{}, nil
}

// hasLabels tells whether labels include every pair of want.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ---- image service ----

func (s *Server) ImageFsInfo(context.Context, *criv1.ImageFsInfoRequest) (*criv1.ImageFsInfoResponse, error) {
	if s.NoImageAPI {
		return nil, status.Error(codes.Unimplemented, "no image service here")
	}
	return &criv1.ImageFsInfoResponse{}, nil
}

func (s *Server) ImageStatus(_ context.Context, r *criv1.ImageStatusRequest) (*criv1.ImageStatusResponse, error) {
	if s.NoImageAPI {
		return nil, status.Error(codes.Unimplemented, "no image service here")
	}
	img := r.GetImage().GetImage()
	if err := s.StatusErrors[img]; err != nil {
		return nil, err
	}
	if !s.Has(img) {
		return &criv1.ImageStatusResponse{}, nil
	}
	return &criv1.ImageStatusResponse{Image: &criv1.Image{
		Id:       "sha256:" + digestOf(img),
		RepoTags: []string{img},
		Size:     1 << 20,
	}}, nil
}

func (s *Server) PullImage(ctx context.Context, r *criv1.PullImageRequest) (*criv1.PullImageResponse, error) {
	if s.NoImageAPI {
		return nil, status.Error(codes.Unimplemented, "no image service here")
	}
	img := r.GetImage().GetImage()
	s.mu.Lock()
	s.pulls = append(s.pulls, img)
	s.started++
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	if s.started == s.HoldPulls {
		close(s.allStarted)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	if s.HoldPulls > 1 {
		select {
		case <-s.allStarted:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(holdLimit):
			return nil, status.Errorf(codes.DeadlineExceeded, "pull of %s waited in vain for %d pulls to run at once", img, s.HoldPulls)
		}
	}
	if err := s.PullErrors[img]; err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.images[img] = true
	s.mu.Unlock()
	return &criv1.PullImageResponse{ImageRef: "sha256:" + digestOf(img)}, nil
}

// digestOf makes a stable fake digest out of an image name.
func digestOf(image string) string {
	sum := sha256.Sum256([]byte(image))
	return hex.EncodeToString(sum[:])
}
