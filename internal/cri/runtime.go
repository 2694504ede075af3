package cri

import (
	"context"
	"errors"
	"time"
)

// Runtime is a connection to a container runtime. Its methods are safe for
// concurrent use. Errors the runtime returns keep their gRPC status; calls
// the runtime does not implement wrap ErrUnimplemented.
type Runtime interface {
	// Endpoint is the endpoint the connection was made to, as given.
	Endpoint() string
	// Version returns the runtime's name and versions.
	Version(ctx context.Context) (*VersionInfo, error)
	// Status returns the runtime's conditions; verbose asks for the
	// runtime's extra information too.
	Status(ctx context.Context, verbose bool) (*Status, error)
	// RuntimeConfig asks for the runtime's configuration, which the kubelet
	// uses to learn the cgroup driver.
	RuntimeConfig(ctx context.Context) error

	ImageService

	// ListPodSandboxes returns the pod sandboxes whose labels include all
	// of labels (every sandbox when labels is empty).
	ListPodSandboxes(ctx context.Context, labels map[string]string) ([]PodSandbox, error)
	// StopPodSandbox stops the sandbox and its containers; stopping a
	// stopped sandbox succeeds.
	StopPodSandbox(ctx context.Context, id string) error
	// RemovePodSandbox removes a sandbox and its containers; removing one
	// that is gone succeeds.
	RemovePodSandbox(ctx context.Context, id string) error
	// ListContainers returns the containers that match filter.
	ListContainers(ctx context.Context, filter ContainerFilter) ([]Container, error)
	// StopContainer stops a container, killing it once grace has passed
	// (0 kills it at once).
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer removes a container, stopping it first if needed.
	RemoveContainer(ctx context.Context, id string) error

	// Close releases the connection.
	Close() error
}

// ImageService is the image half of a Runtime.
type ImageService interface {
	// ImageStatus describes image, or returns nil when the runtime does not
	// have it.
	ImageStatus(ctx context.Context, image string) (*Image, error)
	// ImagePresent tells whether the runtime has image.
	ImagePresent(ctx context.Context, image string) (bool, error)
	// PullImage pulls image; it is bounded only by ctx.
	PullImage(ctx context.Context, image string) error
}

// ImagePuller is what EnsureImages needs of a runtime.
type ImagePuller interface {
	ImagePresent(ctx context.Context, image string) (bool, error)
	PullImage(ctx context.Context, image string) error
}

// VersionInfo is the answer to a CRI Version call.
type VersionInfo struct {
	RuntimeName       string
	RuntimeVersion    string
	RuntimeAPIVersion string
}

// Status is the answer to a CRI Status call.
type Status struct {
	Conditions []Condition
	// Info is only filled in by a verbose call; containerd puts its
	// configuration, as JSON, under "config".
	Info map[string]string
}

// Condition is one condition of a container runtime, such as
// "RuntimeReady" or "NetworkReady".
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// Image is an image the runtime has.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	// Size in bytes.
	Size   uint64
	Pinned bool
}

// PodSandbox is a pod's sandbox as the runtime lists it.
type PodSandbox struct {
	ID        string
	Name      string
	Namespace string
	UID       string
	Attempt   uint32
	// Ready is true while the sandbox runs.
	Ready     bool
	Labels    map[string]string
	CreatedAt time.Time
}

// ContainerState is the state of a container.
type ContainerState string

// The states of a container.
const (
	ContainerCreated ContainerState = "created"
	ContainerRunning ContainerState = "running"
	ContainerExited  ContainerState = "exited"
	ContainerUnknown ContainerState = "unknown"
)

// Container is a container as the runtime lists it.
type Container struct {
	ID           string
	PodSandboxID string
	Name         string
	Attempt      uint32
	// Image is the image the container was created from, as requested.
	Image     string
	State     ContainerState
	Labels    map[string]string
	CreatedAt time.Time
}

// ContainerFilter selects containers; empty fields select everything.
type ContainerFilter struct {
	// PodSandboxID keeps the containers of one sandbox.
	PodSandboxID string
	// Labels keeps the containers whose labels include all of these.
	Labels map[string]string
}

// ErrUnimplemented is wrapped by errors of calls the runtime does not
// implement.
var ErrUnimplemented = errors.New("not implemented by the container runtime")
