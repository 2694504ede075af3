package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// DefaultCallTimeout bounds each call except image pulls when
	// Options.CallTimeout is zero.
	DefaultCallTimeout = 30 * time.Second
	// maxMessage is the largest answer accepted from a runtime; a node
	// with many containers gives long lists.
	maxMessage = 16 << 20
)

// Options tune a connection. The zero value gives the defaults.
type Options struct {
	// CallTimeout bounds each call except PullImage (default
	// DefaultCallTimeout). StopContainer adds the grace period to it.
	CallTimeout time.Duration
}

// client is a Runtime over gRPC.
type client struct {
	endpoint string
	timeout  time.Duration
	conn     *grpc.ClientConn
	rt       criv1.RuntimeServiceClient
	images   criv1.ImageServiceClient
}

// Dial connects to the runtime at endpoint, a "unix://" URL or a bare
// socket path, and checks that it answers both the CRI v1 runtime and image
// APIs. Other schemes are refused. The caller closes the Runtime.
func Dial(ctx context.Context, endpoint string, o Options) (Runtime, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("container runtime endpoint %q: only unix:// sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)),
	)
	if err != nil {
		return nil, fmt.Errorf("container runtime endpoint %q: %w", endpoint, err)
	}
	c := &client{
		endpoint: endpoint,
		timeout:  o.CallTimeout,
		conn:     conn,
		rt:       criv1.NewRuntimeServiceClient(conn),
		images:   criv1.NewImageServiceClient(conn),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultCallTimeout
	}
	cctx, cancel := c.bound(ctx)
	defer cancel()
	if _, err := c.rt.Version(cctx, &criv1.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the CRI v1 runtime API at %q does not answer: %w", endpoint, err)
	}
	if _, err := c.images.ImageFsInfo(cctx, &criv1.ImageFsInfoRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the CRI v1 image API at %q does not answer: %w", endpoint, err)
	}
	return c, nil
}

// bound gives a call its time limit.
func (c *client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *client) Endpoint() string { return c.endpoint }
func (c *client) Close() error     { return c.conn.Close() }

func (c *client) Version(ctx context.Context) (*VersionInfo, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	resp, err := c.rt.Version(ctx, &criv1.VersionRequest{})
	if err != nil {
		return nil, wrap(err)
	}
	return &VersionInfo{
		RuntimeName:       resp.GetRuntimeName(),
		RuntimeVersion:    resp.GetRuntimeVersion(),
		RuntimeAPIVersion: resp.GetRuntimeApiVersion(),
	}, nil
}

func (c *client) Status(ctx context.Context, verbose bool) (*Status, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	resp, err := c.rt.Status(ctx, &criv1.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, wrap(err)
	}
	st := &Status{Info: resp.GetInfo()}
	for _, cond := range resp.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, Condition{
			Type: cond.GetType(), Status: cond.GetStatus(), Reason: cond.GetReason(), Message: cond.GetMessage(),
		})
	}
	return st, nil
}

func (c *client) RuntimeConfig(ctx context.Context) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	_, err := c.rt.RuntimeConfig(ctx, &criv1.RuntimeConfigRequest{})
	return wrap(err)
}

func (c *client) ImageStatus(ctx context.Context, image string) (*Image, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	resp, err := c.images.ImageStatus(ctx, &criv1.ImageStatusRequest{Image: &criv1.ImageSpec{Image: image}})
	if err != nil {
		return nil, wrap(err)
	}
	img := resp.GetImage()
	if img == nil || img.GetId() == "" {
		return nil, nil
	}
	return &Image{
		ID:          img.GetId(),
		RepoTags:    img.GetRepoTags(),
		RepoDigests: img.GetRepoDigests(),
		Size:        img.GetSize(),
		Pinned:      img.GetPinned(),
	}, nil
}

func (c *client) ImagePresent(ctx context.Context, image string) (bool, error) {
	img, err := c.ImageStatus(ctx, image)
	return img != nil, err
}

func (c *client) PullImage(ctx context.Context, image string) error {
	// No time limit of our own: a large image on a slow link takes long,
	// and the caller decides how long is too long.
	_, err := c.images.PullImage(ctx, &criv1.PullImageRequest{Image: &criv1.ImageSpec{Image: image}})
	return wrap(err)
}

func (c *client) ListPodSandboxes(ctx context.Context, labels map[string]string) ([]PodSandbox, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req := &criv1.ListPodSandboxRequest{}
	if len(labels) > 0 {
		req.Filter = &criv1.PodSandboxFilter{LabelSelector: labels}
	}
	resp, err := c.rt.ListPodSandbox(ctx, req)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]PodSandbox, 0, len(resp.GetItems()))
	for _, s := range resp.GetItems() {
		md := s.GetMetadata()
		out = append(out, PodSandbox{
			ID:        s.GetId(),
			Name:      md.GetName(),
			Namespace: md.GetNamespace(),
			UID:       md.GetUid(),
			Attempt:   md.GetAttempt(),
			Ready:     s.GetState() == criv1.PodSandboxState_SANDBOX_READY,
			Labels:    s.GetLabels(),
			CreatedAt: time.Unix(0, s.GetCreatedAt()),
		})
	}
	return out, nil
}

func (c *client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	_, err := c.rt.StopPodSandbox(ctx, &criv1.StopPodSandboxRequest{PodSandboxId: id})
	return wrap(err)
}

func (c *client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	_, err := c.rt.RemovePodSandbox(ctx, &criv1.RemovePodSandboxRequest{PodSandboxId: id})
	return wrap(err)
}

func (c *client) ListContainers(ctx context.Context, filter ContainerFilter) ([]Container, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req := &criv1.ListContainersRequest{}
	if filter.PodSandboxID != "" || len(filter.Labels) > 0 {
		req.Filter = &criv1.ContainerFilter{PodSandboxId: filter.PodSandboxID, LabelSelector: filter.Labels}
	}
	resp, err := c.rt.ListContainers(ctx, req)
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]Container, 0, len(resp.GetContainers()))
	for _, ct := range resp.GetContainers() {
		out = append(out, Container{
			ID:           ct.GetId(),
			PodSandboxID: ct.GetPodSandboxId(),
			Name:         ct.GetMetadata().GetName(),
			Attempt:      ct.GetMetadata().GetAttempt(),
			Image:        ct.GetImage().GetImage(),
			State:        containerState(ct.GetState()),
			Labels:       ct.GetLabels(),
			CreatedAt:    time.Unix(0, ct.GetCreatedAt()),
		})
	}
	return out, nil
}

func (c *client) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	// The runtime may wait the whole grace period before it kills.
	ctx, cancel := context.WithTimeout(ctx, c.timeout+grace)
	defer cancel()
	_, err := c.rt.StopContainer(ctx, &criv1.StopContainerRequest{ContainerId: id, Timeout: int64((grace + time.Second - 1) / time.Second)})
	return wrap(err)
}

func (c *client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	_, err := c.rt.RemoveContainer(ctx, &criv1.RemoveContainerRequest{ContainerId: id})
	return wrap(err)
}

func containerState(s criv1.ContainerState) ContainerState {
	switch s {
	case criv1.ContainerState_CONTAINER_CREATED:
		return ContainerCreated
	case criv1.ContainerState_CONTAINER_RUNNING:
		return ContainerRunning
	case criv1.ContainerState_CONTAINER_EXITED:
		return ContainerExited
	}
	return ContainerUnknown
}

// wrap marks errors of calls the runtime does not implement, so callers
// can tell them apart with errors.Is(err, ErrUnimplemented).
func wrap(err error) error {
	if err != nil && status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", ErrUnimplemented, err)
	}
	return err
}
