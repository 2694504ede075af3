package preflight

import (
	"context"
	"crypto/tls"
	"io/fs"
	"net/url"

	"github.com/kubeadm-go/kubeadm/internal/cri"
)

// Host is the machine the checks inspect. Paths are absolute paths on that
// machine. Every method must be safe for concurrent use.
type Host interface {
	// ReadFile, Stat and ReadDir read the file system.
	ReadFile(path string) ([]byte, error)
	Stat(path string) (fs.FileInfo, error)
	ReadDir(path string) ([]fs.DirEntry, error)

	// ListenTCP binds port on every local address and releases it at once;
	// it fails when something else holds the port.
	ListenTCP(port int) error

	// LookPath finds an executable in the PATH.
	LookPath(file string) (string, error)
	// Command runs a program and returns what it wrote to standard output.
	// A non-zero exit status is an error.
	Command(ctx context.Context, name string, args ...string) ([]byte, error)

	// EffectiveUID is the effective user ID kubeadm runs as.
	EffectiveUID() int
	// NumCPU is the number of CPUs this process may use.
	NumCPU() int
	// TotalMemory is the machine's RAM in bytes.
	TotalMemory() (uint64, error)
	// KernelRelease is the running kernel's release, as "uname -r" prints it.
	KernelRelease() (string, error)

	// LookupHost resolves a host name.
	LookupHost(ctx context.Context, host string) ([]string, error)
	// Proxy returns the proxy a request to u would go through (nil for a
	// direct connection), following the proxy environment variables.
	Proxy(u *url.URL) (*url.URL, error)
	// HTTPGet fetches u with the given TLS settings (nil for the defaults)
	// and returns the body of a 2xx answer.
	HTTPGet(ctx context.Context, u string, tlsConfig *tls.Config) ([]byte, error)

	// DialCRI connects to the container runtime at endpoint (for example
	// "unix:///var/run/containerd/containerd.sock") and checks that it
	// answers the CRI v1 runtime and image APIs.
	DialCRI(ctx context.Context, endpoint string) (Runtime, error)
}

// Runtime is the part of a container runtime connection the checks use;
// a cri.Runtime is one.
type Runtime interface {
	// Status returns the runtime's conditions; verbose asks for the
	// runtime's extra information too.
	Status(ctx context.Context, verbose bool) (*RuntimeStatus, error)
	// RuntimeConfig asks for the runtime's configuration. A runtime that
	// does not implement the call yields an error wrapping
	// cri.ErrUnimplemented.
	RuntimeConfig(ctx context.Context) error
	// ImagePresent tells whether image is already in the runtime's store.
	ImagePresent(ctx context.Context, image string) (bool, error)
	// PullImage pulls image.
	PullImage(ctx context.Context, image string) error
	// Close releases the connection.
	Close() error
}

// RuntimeStatus is the answer to a CRI Status call.
type RuntimeStatus = cri.Status

// RuntimeCondition is one condition of a container runtime.
type RuntimeCondition = cri.Condition
