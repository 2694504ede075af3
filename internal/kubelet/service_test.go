package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// exitError is what a command that ran and failed returns.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

// result is the fake outcome of one command line.
type result struct {
	out string
	err error
}

// fakeHost records the commands run and answers from a table; it never
// touches the machine.
type fakeHost struct {
	paths   map[string]bool
	results map[string]result // by "name arg..."
	calls   []string
}

func (h *fakeHost) Exists(path string) bool { return h.paths[path] }

func (h *fakeHost) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	h.calls = append(h.calls, line)
	r := h.results[line]
	return []byte(r.out), r.err
}

func TestServiceInitSystem(t *testing.T) {
	tests := []struct {
		paths map[string]bool
		want  InitSystem
	}{
		{nil, NoInitSystem},
		{map[string]bool{"/run/systemd/system": true}, Systemd},
		{map[string]bool{"/run/openrc": true}, OpenRC},
		{map[string]bool{"/run/systemd/system": true, "/run/openrc": true}, Systemd},
	}
	for _, tt := range tests {
		s := NewService(&fakeHost{paths: tt.paths}, &bytes.Buffer{})
		if got := s.InitSystem(); got != tt.want {
			t.Errorf("InitSystem with %v = %q, want %q", tt.paths, got, tt.want)
		}
	}
}

func TestServiceStopStart(t *testing.T) {
	systemd := map[string]bool{"/run/systemd/system": true}
	openrc := map[string]bool{"/run/openrc": true}
	tests := []struct {
		name      string
		paths     map[string]bool
		results   map[string]result
		wantCalls []string
		wantOut   []string // substrings, in order
		notOut    []string
	}{
		{
			name:  "systemd",
			paths: systemd,
			wantCalls: []string{
				"systemctl status kubelet", "systemctl stop kubelet",
				"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet",
			},
			wantOut: []string{"[kubelet-start] Starting the kubelet\n"},
			notOut:  []string{"WARNING"},
		},
		{
			name:  "systemd, an inactive kubelet (status 3) still counts as present",
			paths: systemd,
			results: map[string]result{
				"systemctl status kubelet": {out: "Active: inactive (dead)", err: exitError(3)},
			},
			wantCalls: []string{
				"systemctl status kubelet", "systemctl stop kubelet",
				"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet",
			},
			notOut: []string{"WARNING", "knows no"},
		},
		{
			name:  "systemd, commands fail",
			paths: systemd,
			results: map[string]result{
				"systemctl stop kubelet":    {out: "stop refused\n", err: exitError(1)},
				"systemctl restart kubelet": {out: "Job for kubelet.service failed.\nSee the journal.\n", err: exitError(1)},
			},
			wantCalls: []string{
				"systemctl status kubelet", "systemctl stop kubelet",
				"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet",
			},
			wantOut: []string{
				"[kubelet-start] WARNING: unable to stop the kubelet service while its configuration is written: systemctl stop kubelet: exit status 1: stop refused\n",
				"[kubelet-start] Starting the kubelet\n",
				"[kubelet-start] WARNING: unable to start the kubelet service: systemctl restart kubelet: exit status 1: Job for kubelet.service failed.; See the journal.\n",
				"[kubelet-start] Make sure",
			},
		},
		{
			name:  "systemd, reload fails: no restart",
			paths: systemd,
			results: map[string]result{
				"systemctl daemon-reload": {err: exitError(1)},
			},
			wantCalls: []string{
				"systemctl status kubelet", "systemctl stop kubelet",
				"systemctl status kubelet", "systemctl daemon-reload",
			},
			wantOut: []string{"[kubelet-start] WARNING: unable to start the kubelet service: reloading systemd: systemctl daemon-reload: exit status 1\n"},
		},
		{
			name:  "systemd, no kubelet unit: not stopped, start still tried",
			paths: systemd,
			results: map[string]result{
				"systemctl status kubelet": {out: "Unit kubelet.service could not be found.", err: exitError(4)},
			},
			wantCalls: []string{
				"systemctl status kubelet",
				"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet",
			},
			wantOut: []string{
				"[kubelet-start] The init system knows no kubelet service, so it is not stopped",
				"[kubelet-start] Starting the kubelet\n",
				"[kubelet-start] The init system knows no kubelet service yet; trying to start it anyway\n",
			},
			notOut: []string{"WARNING"},
		},
		{
			name:  "openrc",
			paths: openrc,
			wantCalls: []string{
				"rc-service kubelet status", "rc-service kubelet stop",
				"rc-service kubelet status", "rc-service kubelet restart",
			},
			notOut: []string{"WARNING"},
		},
		{
			name:  "openrc, no kubelet service",
			paths: openrc,
			results: map[string]result{
				"rc-service kubelet status":  {out: " * rc-service: service `kubelet' does not exist", err: exitError(1)},
				"rc-service kubelet restart": {out: " * rc-service: service `kubelet' does not exist", err: exitError(1)},
			},
			wantCalls: []string{
				"rc-service kubelet status",
				"rc-service kubelet status", "rc-service kubelet restart",
			},
			wantOut: []string{
				"knows no kubelet service, so it is not stopped",
				"[kubelet-start] WARNING: unable to start the kubelet service: rc-service kubelet restart: exit status 1: * rc-service: service `kubelet' does not exist\n",
			},
		},
		{
			name: "neither: nothing run, the user told",
			wantOut: []string{
				"[kubelet-start] No supported init system (systemd or OpenRC) is running, so the kubelet is not stopped",
				"[kubelet-start] Starting the kubelet\n",
				"[kubelet-start] No supported init system (systemd or OpenRC) is running, so the kubelet was not started",
			},
			notOut: []string{"WARNING"},
		},
		{
			name:  "systemctl missing",
			paths: systemd,
			results: map[string]result{
				"systemctl status kubelet":  {err: errors.New(`exec: "systemctl": executable file not found in $PATH`)},
				"systemctl stop kubelet":    {err: errors.New(`exec: "systemctl": executable file not found in $PATH`)},
				"systemctl daemon-reload":   {err: errors.New(`exec: "systemctl": executable file not found in $PATH`)},
				"systemctl restart kubelet": {err: errors.New(`exec: "systemctl": executable file not found in $PATH`)},
			},
			wantCalls: []string{
				"systemctl status kubelet", "systemctl stop kubelet",
				"systemctl status kubelet", "systemctl daemon-reload",
			},
			wantOut: []string{
				"WARNING: unable to stop the kubelet service while its configuration is written: systemctl stop kubelet: exec:",
				"WARNING: unable to start the kubelet service: reloading systemd: systemctl daemon-reload: exec:",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &fakeHost{paths: tt.paths, results: tt.results}
			var out bytes.Buffer
			s := NewService(host, &out)
			s.Stop(context.Background())
			s.Start(context.Background())
			if !reflect.DeepEqual(host.calls, tt.wantCalls) {
				t.Errorf("commands:\n%q\nwant:\n%q", host.calls, tt.wantCalls)
			}
			rest := out.String()
			for _, w := range tt.wantOut {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("output lacks (in order) %q:\n%s", w, out.String())
					break
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.notOut {
				if strings.Contains(out.String(), n) {
					t.Errorf("output has %q:\n%s", n, out.String())
				}
			}
		})
	}
}

// Restart is Start for a running kubelet: the same commands, no progress
// line, only what went wrong.
func TestServiceRestart(t *testing.T) {
	t.Run("systemd", func(t *testing.T) {
		host := &fakeHost{paths: map[string]bool{"/run/systemd/system": true}}
		var out bytes.Buffer
		NewService(host, &out).Restart(context.Background())
		if want := []string{"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet"}; !reflect.DeepEqual(host.calls, want) {
			t.Errorf("commands %q, want %q", host.calls, want)
		}
		if out.Len() != 0 {
			t.Errorf("output %q, want none", out.String())
		}
	})
	t.Run("the restart fails", func(t *testing.T) {
		host := &fakeHost{
			paths:   map[string]bool{"/run/openrc": true},
			results: map[string]result{"rc-service kubelet restart": {out: "no such service\n", err: exitError(1)}},
		}
		var out bytes.Buffer
		NewService(host, &out).Restart(context.Background())
		if want := "[kubelet-start] WARNING: unable to restart the kubelet service: rc-service kubelet restart: exit status 1: no such service\n"; !strings.Contains(out.String(), want) {
			t.Errorf("output %q, want %q", out.String(), want)
		}
	})
	t.Run("no init system", func(t *testing.T) {
		host := &fakeHost{}
		var out bytes.Buffer
		NewService(host, &out).Restart(context.Background())
		if len(host.calls) != 0 {
			t.Errorf("commands %q", host.calls)
		}
		if want := "so the kubelet was not restarted: restart it by other means\n"; !strings.Contains(out.String(), want) {
			t.Errorf("output %q, want %q", out.String(), want)
		}
	})
}

func TestServiceResolvConf(t *testing.T) {
	systemd := map[string]bool{"/run/systemd/system": true}
	openrc := map[string]bool{"/run/openrc": true}
	tests := []struct {
		name    string
		paths   map[string]bool
		results map[string]result
		want    string
		warns   bool
	}{
		{
			name: "systemd, resolved active", paths: systemd,
			results: map[string]result{"systemctl is-active systemd-resolved": {out: "active\n"}},
			want:    SystemdResolvConf,
		},
		{
			name: "systemd, resolved inactive", paths: systemd,
			results: map[string]result{"systemctl is-active systemd-resolved": {out: "inactive\n", err: exitError(3)}},
		},
		{
			name: "systemd, success without saying active", paths: systemd,
			results: map[string]result{"systemctl is-active systemd-resolved": {out: "activating\n"}},
		},
		{
			name: "systemd, systemctl missing", paths: systemd,
			results: map[string]result{"systemctl is-active systemd-resolved": {err: errors.New("exec: not found")}},
			warns:   true,
		},
		{
			name: "openrc, resolved running", paths: openrc,
			results: map[string]result{"rc-service systemd-resolved status": {out: " * status: started"}},
			want:    SystemdResolvConf,
		},
		{
			name: "openrc, no resolved", paths: openrc,
			results: map[string]result{"rc-service systemd-resolved status": {err: exitError(1)}},
		},
		{name: "neither", warns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			host := &fakeHost{paths: tt.paths, results: tt.results}
			got := NewService(host, &out).ResolvConf(context.Background())
			if got != tt.want {
				t.Errorf("ResolvConf = %q, want %q", got, tt.want)
			}
			if warned := strings.Contains(out.String(), "WARNING"); warned != tt.warns {
				t.Errorf("warned = %v, want %v: %s", warned, tt.warns, out.String())
			}
			for _, c := range host.calls {
				if strings.Contains(c, "kubelet") {
					t.Errorf("asking about resolved ran %q", c)
				}
			}
		})
	}
}

// OSHost must report a failed command with its exit code, which Service
// relies on. Only a shell exiting with a code is run.
func TestOSHostExitCode(t *testing.T) {
	_, err := OSHost{}.Run(context.Background(), "sh", "-c", "exit 4")
	if code, ran := exitCode(err); !ran || code != 4 {
		t.Errorf("exitCode(%v) = %d, %v; want 4, true", err, code, ran)
	}
	_, err = OSHost{}.Run(context.Background(), "/nonexistent/command")
	if _, ran := exitCode(err); err == nil || ran {
		t.Errorf("a missing command gave %v", err)
	}
	if !(OSHost{}).Exists(".") || (OSHost{}).Exists("/nonexistent/path") {
		t.Error("Exists is wrong")
	}
}

func TestCommand(t *testing.T) {
	h := &fakeHost{results: map[string]result{
		"systemctl start a": {out: "Job failed.\n  See the journal.\n", err: exitError(1)},
		"systemctl start b": {err: exitError(5)},
	}}
	ctx := context.Background()
	if err := Command(ctx, h, "systemctl", "stop", "a"); err != nil {
		t.Errorf("a command that succeeds: %v", err)
	}
	err := Command(ctx, h, "systemctl", "start", "a")
	if want := "systemctl start a: exit status 1: Job failed. See the journal."; err == nil || err.Error() != want {
		t.Errorf("failure with output = %v, want %q", err, want)
	}
	var code interface{ ExitCode() int }
	if !errors.As(err, &code) || code.ExitCode() != 1 {
		t.Errorf("the exit code is lost from %v", err)
	}
	if err := Command(ctx, h, "systemctl", "start", "b"); err == nil || err.Error() != "systemctl start b: exit status 5" {
		t.Errorf("failure without output = %v", err)
	}
}
