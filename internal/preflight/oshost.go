package preflight

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// maxHTTPBody caps what HTTPGet reads; version answers are tiny.
const maxHTTPBody = 1 << 20

// osHost is the machine kubeadm runs on (after any --rootfs chroot).
type osHost struct {
	// portMu serialises ListenTCP so two checks of the same port cannot
	// see each other's probe.
	portMu sync.Mutex
}

// NewHost returns the Host of the machine kubeadm runs on.
func NewHost() Host { return &osHost{} }

func (h *osHost) ReadFile(path string) ([]byte, error) {
	return boundedread.ReadFile(path, boundedread.MaxFile)
}

func (h *osHost) Stat(path string) (fs.FileInfo, error)      { return os.Stat(path) }
func (h *osHost) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }
func (h *osHost) LookPath(file string) (string, error)       { return exec.LookPath(file) }
func (h *osHost) EffectiveUID() int                          { return os.Geteuid() }
func (h *osHost) NumCPU() int                                { return runtime.NumCPU() }

func (h *osHost) ListenTCP(port int) error {
	h.portMu.Lock()
	defer h.portMu.Unlock()
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return err
	}
	return l.Close()
}

func (h *osHost) Command(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			return stdout.Bytes(), fmt.Errorf("%w: %s", err, msg)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}

func (h *osHost) TotalMemory() (uint64, error) {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0, fmt.Errorf("reading the memory size: %w", err)
	}
	return uint64(info.Totalram) * uint64(info.Unit), nil
}

func (h *osHost) KernelRelease() (string, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "", fmt.Errorf("reading the kernel release: %w", err)
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b), nil
}

func (h *osHost) LookupHost(ctx context.Context, host string) ([]string, error) {
	return net.DefaultResolver.LookupHost(ctx, host)
}

func (h *osHost) Proxy(u *url.URL) (*url.URL, error) {
	return http.ProxyFromEnvironment(&http.Request{URL: u})
}

func (h *osHost) HTTPGet(ctx context.Context, u string, tlsConfig *tls.Config) ([]byte, error) {
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     tlsConfig,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		// The client certificate in tlsConfig is for the host asked.
		CheckRedirect: redirectpolicy.SameHost,
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := boundedread.ReadAll(resp.Body, maxHTTPBody, "the answer of "+u)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", u, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	return body, nil
}

func (h *osHost) DialCRI(ctx context.Context, endpoint string) (Runtime, error) {
	return cri.Dial(ctx, endpoint, cri.Options{})
}
