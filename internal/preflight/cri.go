package preflight

import (
	"context"
	"errors"
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
	// criCallTimeout bounds each CRI call except image pulls.
	criCallTimeout = 30 * time.Second
	// criMaxMessage is the largest CRI answer accepted.
	criMaxMessage = 16 << 20
)

// criRuntime talks to a container runtime over gRPC.
type criRuntime struct {
	conn   *grpc.ClientConn
	rt     criv1.RuntimeServiceClient
	images criv1.ImageServiceClient
}

// DialCRI connects to the CRI endpoint (a "unix://" URL or a socket path)
// and checks that the runtime answers the CRI v1 runtime and image APIs.
func DialCRI(ctx context.Context, endpoint string) (Runtime, error) {
	target := endpoint
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("container runtime endpoint %q: only unix:// sockets are supported", endpoint)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(criMaxMessage)),
	)
	if err != nil {
		return nil, fmt.Errorf("container runtime endpoint %q: %w", endpoint, err)
	}
	r := &criRuntime{conn: conn, rt: criv1.NewRuntimeServiceClient(conn), images: criv1.NewImageServiceClient(conn)}

	cctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	if _, err := r.rt.Version(cctx, &criv1.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the CRI v1 runtime API at %q does not answer: %w", endpoint, err)
	}
	if _, err := r.images.ImageFsInfo(cctx, &criv1.ImageFsInfoRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the CRI v1 image API at %q does not answer: %w", endpoint, err)
	}
	return r, nil
}

func (r *criRuntime) Close() error { return r.conn.Close() }

func (r *criRuntime) Status(ctx context.Context, verbose bool) (*RuntimeStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	resp, err := r.rt.Status(ctx, &criv1.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, wrapCRI(err)
	}
	st := &RuntimeStatus{Info: resp.GetInfo()}
	for _, c := range resp.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, RuntimeCondition{Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(), Message: c.GetMessage()})
	}
	return st, nil
}

func (r *criRuntime) RuntimeConfig(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	_, err := r.rt.RuntimeConfig(ctx, &criv1.RuntimeConfigRequest{})
	return wrapCRI(err)
}

func (r *criRuntime) ImagePresent(ctx context.Context, image string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	resp, err := r.images.ImageStatus(ctx, &criv1.ImageStatusRequest{Image: &criv1.ImageSpec{Image: image}})
	if err != nil {
		return false, wrapCRI(err)
	}
	img := resp.GetImage()
	return img != nil && img.GetId() != "" && img.GetSize() > 0, nil
}

func (r *criRuntime) PullImage(ctx context.Context, image string) error {
	_, err := r.images.PullImage(ctx, &criv1.PullImageRequest{Image: &criv1.ImageSpec{Image: image}})
	return wrapCRI(err)
}

// wrapCRI marks errors of calls the runtime does not implement.
func wrapCRI(err error) error {
	if err != nil && status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", ErrUnimplemented, err)
	}
	return err
}

// isUnimplemented tells whether err says the runtime lacks a call.
func isUnimplemented(err error) bool { return errors.Is(err, ErrUnimplemented) }
