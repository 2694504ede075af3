package csrapprover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// connections makes one API per kubeconfig content ("broken" makes
// none) and records which contents were connected, in order.
type connections struct {
	mu   sync.Mutex
	made []string
	apis map[string]API
}

func (c *connections) connect(data []byte) (API, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if string(data) == "broken" {
		return nil, errors.New("not a kubeconfig")
	}
	c.made = append(c.made, string(data))
	if api, ok := c.apis[string(data)]; ok {
		return api, nil
	}
	return &fakeAPI{node: node1()}, nil
}

func (c *connections) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.made...)
}

// logs collects the approver's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, format)
}

func (l *logs) count(part string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, part) {
			n++
		}
	}
	return n
}

// eventually waits up to 5 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 500 {
		if ok() {
			return
		}
		waitABit()
	}
	t.Fatalf("not seen within 5s: %s", what)
}

func writeKubeconfig(t *testing.T, path, content string) {
	t.Helper()
	// A new file replacing the old, as kubeadm writes it.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestReloaderUsesChangedFile: a changed kubeconfig makes a new client,
// which the approver then uses (its requests are approved through it);
// a change that makes no client is logged once and the client kept; an
// unchanged file makes nothing new; ctx's end ends Run.
func TestReloaderUsesChangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet-serving-approver.conf")
	writeKubeconfig(t, path, "first")
	second := &fakeAPI{node: node1(), csrs: []certificatesv1.CertificateSigningRequest{*servingCSR(t, kubeletTemplate())}}
	conns := &connections{apis: map[string]API{"second": second}}
	var l logs
	r := &Reloader{
		Approver: &Approver{Log: l.logf, Resync: 50 * time.Millisecond},
		Path:     path, Connect: conns.connect, Interval: 10 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	eventually(t, "the first client", func() bool { return len(conns.list()) == 1 })
	time.Sleep(50 * time.Millisecond)
	if got := conns.list(); len(got) != 1 {
		t.Fatalf("an unchanged file made clients %v", got)
	}

	writeKubeconfig(t, path, "broken")
	eventually(t, "the broken file logged", func() bool { return l.count("makes no client") == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := l.count("makes no client"); n != 1 {
		t.Errorf("the broken file logged %d times, want once", n)
	}

	writeKubeconfig(t, path, "second")
	eventually(t, "the request approved through the new client", func() bool {
		second.mu.Lock()
		defer second.mu.Unlock()
		return len(second.approved) > 0
	})
	if got := conns.list(); len(got) != 2 || got[1] != "second" {
		t.Errorf("clients made for %v, want [first second]", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

// TestReloaderUnauthorized: a refused credential ends Run when the file
// is unchanged (the kubelet restarts the container), and makes a new
// client when the file changed meanwhile, before the next look.
func TestReloaderUnauthorized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet-serving-approver.conf")
	writeKubeconfig(t, path, "expired")
	conns := &connections{apis: map[string]API{"expired": unauthorizedAPI{}}}
	r := &Reloader{Approver: &Approver{}, Path: path, Connect: conns.connect, Interval: time.Hour}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	select {
	case err := <-done:
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run goes on with a refused credential and an unchanged file")
	}

	// The file is renewed between the first read and the refusal.
	reads := 0
	r.Read = func(p string) ([]byte, error) {
		reads++
		if reads == 1 {
			return []byte("expired"), nil
		}
		return []byte("renewed"), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- r.Run(ctx) }()
	eventually(t, "a client of the renewed file", func() bool {
		got := conns.list()
		return len(got) > 0 && got[len(got)-1] == "renewed"
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

// TestReloaderFirstReadFails: no file, no client: Run fails at once,
// naming the problem.
func TestReloaderFirstReadFails(t *testing.T) {
	dir := t.TempDir()
	r := &Reloader{Approver: &Approver{}, Path: filepath.Join(dir, "missing.conf"), Connect: (&connections{}).connect}
	if err := r.Run(context.Background()); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	writeKubeconfig(t, filepath.Join(dir, "broken.conf"), "broken")
	r.Path = filepath.Join(dir, "broken.conf")
	if err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "broken.conf: not a kubeconfig") {
		t.Errorf("broken file: %v", err)
	}
}
