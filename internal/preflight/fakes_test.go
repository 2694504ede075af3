package preflight

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strings"
	"sync"
	"testing/fstest"
	"time"
)

// fakeHost is a Host made of maps; the zero value is a machine with
// nothing on it.
type fakeHost struct {
	files     map[string]string // path -> content; folders are implied by their files
	dirs      []string          // extra (empty) folders
	busyPorts map[int]bool
	inPath    map[string]bool        // executables found by LookPath
	commands  map[string]fakeCommand // "name arg..." -> result
	euid      int
	cpus      int
	memory    uint64
	memErr    error
	kernel    string
	kernelErr error
	hosts     map[string][]string // name -> addresses
	proxy     func(*url.URL) (*url.URL, error)
	http      map[string]fakeHTTP // URL -> answer

	mu       sync.Mutex
	runtime  *fakeRuntime
	dialErr  error
	dials    int
	commandN int
}

type fakeCommand struct {
	out string
	err error
}

type fakeHTTP struct {
	body string
	err  error
	// wantTLS refuses callers that pass no TLS settings.
	wantTLS bool
}

func (h *fakeHost) mapFS() fstest.MapFS {
	m := fstest.MapFS{}
	for p, c := range h.files {
		m[strings.TrimPrefix(p, "/")] = &fstest.MapFile{Data: []byte(c)}
	}
	for _, d := range h.dirs {
		m[strings.TrimPrefix(d, "/")] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	}
	return m
}

func fsPath(p string) string {
	p = strings.TrimPrefix(path.Clean(p), "/")
	if p == "" {
		return "."
	}
	return p
}

func (h *fakeHost) ReadFile(p string) ([]byte, error)  { return fs.ReadFile(h.mapFS(), fsPath(p)) }
func (h *fakeHost) Stat(p string) (fs.FileInfo, error) { return fs.Stat(h.mapFS(), fsPath(p)) }
func (h *fakeHost) ReadDir(p string) ([]fs.DirEntry, error) {
	return fs.ReadDir(h.mapFS(), fsPath(p))
}

func (h *fakeHost) ListenTCP(port int) error {
	if h.busyPorts[port] {
		return fmt.Errorf("listen tcp :%d: bind: address already in use", port)
	}
	return nil
}

func (h *fakeHost) LookPath(file string) (string, error) {
	if h.inPath[file] {
		return "/usr/bin/" + file, nil
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", file)
}

func (h *fakeHost) Command(ctx context.Context, name string, args ...string) ([]byte, error) {
	h.mu.Lock()
	h.commandN++
	h.mu.Unlock()
	key := strings.Join(append([]string{name}, args...), " ")
	c, ok := h.commands[key]
	if !ok {
		return nil, fmt.Errorf("exec: %q: executable file not found in $PATH", name)
	}
	return []byte(c.out), c.err
}

func (h *fakeHost) EffectiveUID() int { return h.euid }
func (h *fakeHost) NumCPU() int       { return h.cpus }
func (h *fakeHost) TotalMemory() (uint64, error) {
	return h.memory, h.memErr
}
func (h *fakeHost) KernelRelease() (string, error) { return h.kernel, h.kernelErr }

func (h *fakeHost) LookupHost(ctx context.Context, name string) ([]string, error) {
	if a, ok := h.hosts[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", name)
}

func (h *fakeHost) Proxy(u *url.URL) (*url.URL, error) {
	if h.proxy == nil {
		return nil, nil
	}
	return h.proxy(u)
}

func (h *fakeHost) HTTPGet(ctx context.Context, u string, tlsConfig *tls.Config) ([]byte, error) {
	a, ok := h.http[u]
	if !ok {
		return nil, fmt.Errorf("Get %q: connection refused", u)
	}
	if a.wantTLS && tlsConfig == nil {
		return nil, errors.New("remote error: tls: certificate required")
	}
	return []byte(a.body), a.err
}

func (h *fakeHost) DialCRI(ctx context.Context, endpoint string) (Runtime, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials++
	if h.dialErr != nil {
		return nil, h.dialErr
	}
	if h.runtime == nil {
		return nil, fmt.Errorf("dial unix %s: connect: no such file or directory", strings.TrimPrefix(endpoint, "unix://"))
	}
	return h.runtime, nil
}

// fakeRuntime is a container runtime held in memory.
type fakeRuntime struct {
	mu            sync.Mutex
	status        *RuntimeStatus
	statusErr     error
	configErr     error
	present       map[string]bool
	statusFails   bool
	pullFails     map[string]int // image -> how many pulls fail before one works (-1: always)
	pulls         []string
	inFlight, max int
	pullDelay     time.Duration
}

func (r *fakeRuntime) Status(ctx context.Context, verbose bool) (*RuntimeStatus, error) {
	if r.statusErr != nil {
		return nil, r.statusErr
	}
	st := *r.status
	if !verbose {
		st.Info = nil
	}
	return &st, nil
}

func (r *fakeRuntime) RuntimeConfig(ctx context.Context) error { return r.configErr }

func (r *fakeRuntime) ImagePresent(ctx context.Context, image string) (bool, error) {
	if r.statusFails {
		return false, errors.New("image status broken")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.present[image], nil
}

func (r *fakeRuntime) PullImage(ctx context.Context, image string) error {
	r.mu.Lock()
	r.pulls = append(r.pulls, image)
	r.inFlight++
	if r.inFlight > r.max {
		r.max = r.inFlight
	}
	n := r.pullFails[image]
	if n > 0 {
		r.pullFails[image] = n - 1
	}
	r.mu.Unlock()
	time.Sleep(r.pullDelay)
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if n != 0 {
		return fmt.Errorf("rpc error: code = NotFound desc = %s not found", image)
	}
	return nil
}

func (r *fakeRuntime) Close() error { return nil }

func (r *fakeRuntime) pulled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.pulls...)
	sort.Strings(out)
	return out
}

func readyRuntime() *fakeRuntime {
	return &fakeRuntime{status: &RuntimeStatus{Conditions: []RuntimeCondition{
		{Type: "RuntimeReady", Status: true},
		{Type: "NetworkReady", Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	}}}
}

// messages renders errors as strings for comparison.
func messages(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
