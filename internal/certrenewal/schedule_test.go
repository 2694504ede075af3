package certrenewal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// fakeHost is a machine whose init system is given by the run folder it
// has; it records the commands run and fails those in fail.
type fakeHost struct {
	runDir string
	calls  []string
	fail   map[string]bool
}

func (h *fakeHost) Exists(p string) bool { return p == h.runDir }
func (h *fakeHost) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	c := strings.Join(append([]string{name}, args...), " ")
	h.calls = append(h.calls, c)
	if h.fail[c] {
		return []byte("Failed to enable unit\n"), errors.New("exit status 1")
	}
	return nil, nil
}

func TestScheduleInstallAndRemove(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runDir     string
		fail       string
		wantFiles  []string
		wantEnable []string
		wantRemove []string
		wantOut    string
	}{
		{
			name: "systemd", runDir: "/run/systemd/system",
			wantFiles:  []string{"/etc/systemd/system/kubeadm-certs-renewal.service", "/etc/systemd/system/kubeadm-certs-renewal.timer"},
			wantEnable: []string{"systemctl daemon-reload", "systemctl enable --now kubeadm-certs-renewal.timer"},
			wantRemove: []string{"systemctl disable --now kubeadm-certs-renewal.timer", "systemctl daemon-reload"},
			wantOut:    "Every day, \"/usr/bin/kubeadm certs renew expiring\" renews",
		},
		{
			name: "OpenRC", runDir: "/run/openrc",
			wantFiles:  []string{"/etc/periodic/daily/kubeadm-certs-renewal"},
			wantEnable: []string{"rc-update add crond default", "rc-service crond start"},
			wantOut:    "Every day,",
		},
		{
			name: "no init system: systemd's files, not enabled", runDir: "/nowhere",
			wantFiles: []string{"/etc/systemd/system/kubeadm-certs-renewal.service", "/etc/systemd/system/kubeadm-certs-renewal.timer"},
			wantOut:   "WARNING: no supported init system",
		},
		{
			name: "enabling fails: a warning", runDir: "/run/systemd/system", fail: "systemctl enable --now kubeadm-certs-renewal.timer",
			wantFiles:  []string{"/etc/systemd/system/kubeadm-certs-renewal.service", "/etc/systemd/system/kubeadm-certs-renewal.timer"},
			wantEnable: []string{"systemctl daemon-reload", "systemctl enable --now kubeadm-certs-renewal.timer"},
			wantRemove: []string{"systemctl disable --now kubeadm-certs-renewal.timer", "systemctl daemon-reload"},
			wantOut:    "WARNING: the daily renewal could not be enabled: systemctl enable --now kubeadm-certs-renewal.timer: exit status 1: Failed to enable unit",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			h := &fakeHost{runDir: tc.runDir, fail: map[string]bool{tc.fail: true}}
			var out bytes.Buffer
			s := Schedule{Host: h, Root: root, Out: &out}
			for i := 0; i < 2; i++ { // installing again changes nothing
				if err := s.Install(context.Background(), "/usr/bin/kubeadm", ""); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Installed(); !reflect.DeepEqual(got, tc.wantFiles) {
				t.Errorf("installed %v, want %v", got, tc.wantFiles)
			}
			for _, f := range tc.wantFiles {
				fi, err := os.Stat(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(filepath.Join(root, f))
				if !bytes.Contains(data, []byte("/usr/bin/kubeadm certs renew expiring")) && !strings.HasSuffix(f, ".timer") {
					t.Errorf("%s does not run the renewal:\n%s", f, data)
				}
				if want := map[bool]os.FileMode{true: 0o755, false: 0o644}[tc.runDir == "/run/openrc"]; fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want %v", f, fi.Mode().Perm(), want)
				}
			}
			want := append(append([]string{}, tc.wantEnable...), tc.wantEnable...)
			if strings.Join(h.calls, ",") != strings.Join(want, ",") {
				t.Errorf("calls %q, want %q", h.calls, want)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output:\n%s\nwant %q", out.String(), tc.wantOut)
			}
			h.calls = nil
			if err := s.Remove(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := s.Installed(); len(got) != 0 {
				t.Errorf("left %v", got)
			}
			if strings.Join(h.calls, ",") != strings.Join(tc.wantRemove, ",") {
				t.Errorf("remove calls %q, want %q", h.calls, tc.wantRemove)
			}
			h.calls = nil
			if err := s.Remove(context.Background()); err != nil || len(h.calls) != 0 {
				t.Errorf("removing again: %v, calls %v", err, h.calls)
			}
		})
	}
}

// TestScheduleDryRun: the files go flat into the dry-run folder, the init
// system is not asked, and RealPath maps them back.
func TestScheduleDryRun(t *testing.T) {
	root, dry := t.TempDir(), t.TempDir()
	h := &fakeHost{runDir: "/run/systemd/system"}
	var out bytes.Buffer
	s := Schedule{Host: h, Root: root, Out: &out}
	if err := s.Install(context.Background(), "/usr/bin/kubeadm", dry); err != nil {
		t.Fatal(err)
	}
	if len(h.calls) != 0 || len(s.Installed()) != 0 {
		t.Errorf("calls %v, installed %v", h.calls, s.Installed())
	}
	entries, _ := os.ReadDir(dry)
	for _, e := range entries {
		if p, ok := RealPath(e.Name()); !ok || !strings.HasPrefix(p, SystemdDir+"/") {
			t.Errorf("%s: real path %q %v", e.Name(), p, ok)
		}
	}
	if len(entries) != 2 || !strings.Contains(out.String(), "[dryrun] Would enable") {
		t.Errorf("%d files, output:\n%s", len(entries), out.String())
	}
}

// TestUnitFilesVerify has systemd check the service and timer, where
// systemd-analyze is installed.
func TestUnitFilesVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"verify", "--man=no"}
	for _, f := range Files(kubelet.Systemd, self) {
		p := filepath.Join(dir, filepath.Base(f.Path))
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	if out, err := exec.Command(sa, args...).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestOpenRCScriptParses checks the periodic script's syntax with sh -n.
func TestOpenRCScriptParses(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	f := Files(kubelet.OpenRC, "/usr/bin/kubeadm")[0]
	cmd := exec.Command(sh, "-n")
	cmd.Stdin = bytes.NewReader(f.Data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v\n%s", err, out)
	}
	if !bytes.HasPrefix(f.Data, []byte("#!/bin/sh\n")) || !bytes.Contains(f.Data, []byte("exec /usr/bin/kubeadm certs renew expiring")) {
		t.Errorf("script:\n%s", f.Data)
	}
}
