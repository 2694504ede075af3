package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease/leasetest"
)

// fakeSystemd stands in for systemd on the error paths: a start or
// restart runs the unit's command line as a new process (a new MainPID
// with its /proc/PID/cmdline), unless its program is in crash, which
// never stays up: systemd restarts it between two looks (NRestarts
// grows at each "show", unless noNRestarts plays a systemd older than
// v235). health answers from what runs.
type fakeSystemd struct {
	root, proc  string
	pids        map[string]int
	nRestarts   map[string]int
	next        int
	calls       []string
	crash       map[string]bool // programs that exit at once
	sick        map[string]bool // programs that run but never answer healthy
	noNRestarts bool
}

func newFakeSystemd(t *testing.T) *fakeSystemd {
	return &fakeSystemd{root: t.TempDir(), proc: t.TempDir(), pids: map[string]int{}, nRestarts: map[string]int{},
		crash: map[string]bool{}, sick: map[string]bool{}}
}

func (f *fakeSystemd) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	unit := args[len(args)-1]
	comp := strings.TrimSuffix(unit, ".service")
	switch args[0] {
	case "show":
		if f.noNRestarts {
			return fmt.Appendf(nil, "MainPID=%d\n", f.pids[comp]), nil
		}
		if pod, _, err := hostprocess.ReadUnit(hostprocess.UnitPath(f.root, comp), comp); err == nil && f.crash[pod.Spec.Containers[0].Command[0]] {
			f.nRestarts[comp]++
		}
		return fmt.Appendf(nil, "MainPID=%d\nNRestarts=%d\n", f.pids[comp], f.nRestarts[comp]), nil
	case "stop":
		f.pids[comp] = 0
	case "start", "restart":
		if args[0] == "start" && f.pids[comp] != 0 {
			return nil, nil
		}
		f.pids[comp], f.nRestarts[comp] = 0, 0
		pod, _, err := hostprocess.ReadUnit(hostprocess.UnitPath(f.root, comp), comp)
		if err != nil {
			return []byte(err.Error()), errors.New("exit status 5")
		}
		argv := pod.Spec.Containers[0].Command
		if f.crash[argv[0]] {
			return nil, nil
		}
		f.next++
		f.pids[comp] = f.next
		dir := filepath.Join(f.proc, strconv.Itoa(f.next))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return nil, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644)
	}
	return nil, nil
}

// program is what component's process runs ("" when none).
func (f *fakeSystemd) program(comp string) string {
	pid := f.pids[comp]
	if pid == 0 {
		return ""
	}
	data, _ := os.ReadFile(filepath.Join(f.proc, strconv.Itoa(pid), "cmdline"))
	prog, _, _ := strings.Cut(string(data), "\x00")
	return prog
}

func (f *fakeSystemd) healthy(_ context.Context, url string) error {
	comp := url[strings.LastIndex(url, "/")+1:]
	if p := f.program(comp); p == "" || f.sick[p] {
		return fmt.Errorf("%s does not answer", comp)
	}
	return nil
}

func (f *fakeSystemd) restarts() []string {
	var out []string
	for _, c := range f.calls {
		if v, ok := strings.CutPrefix(c, "systemctl restart "); ok {
			out = append(out, v)
		}
	}
	return out
}

func testUnit(t *testing.T, comp, dir string) Unit {
	t.Helper()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: comp, Command: []string{comp, "--v=" + dir}}}}}
	data, err := hostprocess.Unit(comp, pod, "/"+dir+"/"+comp)
	if err != nil {
		t.Fatal(err)
	}
	return Unit{Component: comp, Data: data, HealthURL: "https://127.0.0.1/" + comp}
}

func testUnits(t *testing.T, dir string) []Unit {
	var us []Unit
	for _, c := range hostprocess.Components() {
		us = append(us, testUnit(t, c, dir))
	}
	return us
}

// runningOld installs and starts the old units.
func runningOld(t *testing.T) (*fakeSystemd, *HostUnits, *bytes.Buffer) {
	t.Helper()
	f := newFakeSystemd(t)
	var out bytes.Buffer
	u := hostprocess.Units{Host: f, Root: f.root, Out: &out, ProcDir: f.proc}
	for _, un := range testUnits(t, "old") {
		if _, err := u.Write(un.Component, un.Data); err != nil {
			t.Fatal(err)
		}
		if err := u.Start(context.Background(), un.Component, true); err != nil {
			t.Fatal(err)
		}
	}
	f.calls = nil
	return f, &HostUnits{Units: u, BackupDir: filepath.Join(t.TempDir(), "backup"), Timeout: 300 * time.Millisecond,
		Interval: 5 * time.Millisecond, Healthy: f.healthy, Out: &out}, &out
}

func unitOnDisk(t *testing.T, f *fakeSystemd, comp string) []byte {
	t.Helper()
	data, err := os.ReadFile(hostprocess.UnitPath(f.root, comp))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The units are replaced and restarted one at a time, etcd first; the
// old ones are backed up. A second run changes nothing and restarts
// nothing.
func TestHostUnitsApply(t *testing.T) {
	f, s, out := runningOld(t)
	units := testUnits(t, "new")
	if err := s.Apply(context.Background(), units); err != nil {
		t.Fatal(err)
	}
	if got, want := f.restarts(), []string{"etcd.service", "kube-apiserver.service", "kube-controller-manager.service", "kube-scheduler.service"}; !slices.Equal(got, want) {
		t.Errorf("restarts %q, want %q", got, want)
	}
	for _, u := range units {
		if !bytes.Equal(unitOnDisk(t, f, u.Component), u.Data) || f.program(u.Component) != "/new/"+u.Component {
			t.Errorf("%s runs %q", u.Component, f.program(u.Component))
		}
		old, err := os.ReadFile(filepath.Join(s.BackupDir, u.Component+".service"))
		if err != nil || !strings.Contains(string(old), "/old/"+u.Component) {
			t.Errorf("backup of %s: %v %q", u.Component, err, old)
		}
	}
	if !strings.Contains(out.String(), "This node's API server serves again") {
		t.Errorf("no wait for the API server after etcd:\n%s", out)
	}
	f.calls = nil
	again := &HostUnits{Units: s.Units, BackupDir: s.BackupDir, Timeout: s.Timeout, Interval: s.Interval, Healthy: f.healthy, Out: out}
	if err := again.Apply(context.Background(), units); err != nil {
		t.Fatal(err)
	}
	if r := f.restarts(); len(r) > 0 || len(again.Changed()) > 0 {
		t.Errorf("the second run restarted %q, changed %q", r, again.Changed())
	}
}

// A unit written by a run that stopped before restarting its service is
// restarted by the next run.
func TestHostUnitsApplyAfterCrash(t *testing.T) {
	f, s, _ := runningOld(t)
	units := testUnits(t, "new")
	if _, err := s.Units.Write(hostprocess.KubeScheduler, units[3].Data); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), units); err != nil {
		t.Fatal(err)
	}
	if f.program(hostprocess.KubeScheduler) != "/new/kube-scheduler" {
		t.Errorf("the scheduler runs %q", f.program(hostprocess.KubeScheduler))
	}
}

// A component that does not come back healthy puts back every unit
// changed so far, newest first, restarts them and fails, naming it; etcd,
// which upgraded fine and has peers, keeps its data.
func TestHostUnitsRollback(t *testing.T) {
	for name, tc := range map[string]struct {
		crash, noNRestarts bool
		want               string
	}{
		"unhealthy": {want: "not up after"},
		"crashing":  {crash: true, want: "kube-controller-manager exited 3 times; read its log with 'journalctl -u kube-controller-manager.service'"},
		// Without NRestarts, a process never seen running is waited for.
		"crashing, systemd before v235": {crash: true, noNRestarts: true, want: "systemd runs no process for kube-controller-manager.service"},
	} {
		t.Run(name, func(t *testing.T) {
			f, s, _ := runningOld(t)
			f.noNRestarts = tc.noNRestarts
			before := map[string][]byte{}
			for _, c := range hostprocess.Components() {
				before[c] = unitOnDisk(t, f, c)
			}
			if tc.crash {
				f.crash["/new/kube-controller-manager"] = true
			} else {
				f.sick["/new/kube-controller-manager"] = true
			}
			s.EtcdData = EtcdDataFixture(t, 3)
			err := s.Apply(context.Background(), testUnits(t, "new"))
			var ce *ComponentError
			if !errors.As(err, &ce) || ce.Component != hostprocess.KubeControllerManager || ce.RollbackErr != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the previous units were restored") {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			for _, c := range hostprocess.Components() {
				if !bytes.Equal(unitOnDisk(t, f, c), before[c]) || f.program(c) != "/old/"+c {
					t.Errorf("%s runs %q after the rollback", c, f.program(c))
				}
			}
			want := []string{"etcd.service", "kube-apiserver.service", "kube-controller-manager.service", "kube-controller-manager.service", "kube-apiserver.service", "etcd.service"}
			if got := f.restarts(); !slices.Equal(got, want) {
				t.Errorf("restarts %q, want %q", got, want)
			}
			if got := EtcdDataOf(s.EtcdData.DataDir); got != "new" {
				t.Errorf("etcd's data is %q after the rollback, want the new version's", got)
			}
		})
	}
}

// When the previous unit does not come back either, both failures are
// reported.
func TestHostUnitsRollbackFails(t *testing.T) {
	f, s, _ := runningOld(t)
	f.sick["/new/kube-controller-manager"], f.sick["/old/kube-controller-manager"] = true, true
	err := s.Apply(context.Background(), testUnits(t, "new"))
	var ce *ComponentError
	if !errors.As(err, &ce) || ce.RollbackErr == nil || !strings.Contains(err.Error(), "kube-controller-manager did not come back after its unit was restored") {
		t.Fatalf("Apply: %v", err)
	}
}

// TestHostUnitsRollbackEtcdData: the rollback puts etcd's data back, with
// etcd stopped, when etcd's own upgrade failed or when etcd is its
// cluster's only member; a member with peers keeps its data, and a
// missing backup is reported with the units restored all the same. After
// a restore, the units the rollback did not restart, then the kubelet,
// are restarted too.
func TestHostUnitsRollbackEtcdData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sick     string // the new program that never answers healthy
		members  int
		noBackup bool
		want     string // etcd's data after the rollback
		wantErr  string // in the rollback's error
		restarts []string
	}{
		{name: "single member, the API server fails", sick: "/new/kube-apiserver", members: 1, want: "old",
			restarts: []string{"etcd", "kube-apiserver", "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"}},
		{name: "three members, the API server fails", sick: "/new/kube-apiserver", members: 3, want: "new",
			restarts: []string{"etcd", "kube-apiserver", "kube-apiserver", "etcd"}},
		{name: "single member, backup gone", sick: "/new/kube-apiserver", members: 1, noBackup: true, want: "new", wantErr: "is gone",
			restarts: []string{"etcd", "kube-apiserver", "kube-apiserver", "etcd"}},
		{name: "three members, etcd fails", sick: "/new/etcd", members: 3, want: "old",
			restarts: []string{"etcd", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s, out := runningOld(t)
			f.sick[tc.sick] = true
			s.EtcdData = EtcdDataFixture(t, tc.members)
			s.EtcdData.Out = out
			if tc.noBackup {
				if err := os.RemoveAll(s.EtcdData.Backup); err != nil {
					t.Fatal(err)
				}
			}
			chowned := false
			s.EtcdData.Chown = func() error {
				chowned = true
				if f.pids[hostprocess.Etcd] != 0 {
					t.Error("etcd's data was put back while etcd runs")
				}
				if !bytes.Equal(unitOnDisk(t, f, hostprocess.Etcd), testUnit(t, hostprocess.Etcd, "old").Data) {
					t.Error("etcd's data was put back before its previous unit")
				}
				return nil
			}
			kubeletRestarts := 0
			s.RestartKubelet = func(context.Context) {
				kubeletRestarts++
				for _, c := range hostprocess.Components() {
					if f.program(c) != "/old/"+c {
						t.Errorf("the kubelet was restarted while %s runs %q", c, f.program(c))
					}
				}
			}
			err := s.Apply(context.Background(), testUnits(t, "new"))
			var ce *ComponentError
			if !errors.As(err, &ce) {
				t.Fatalf("Apply: %v", err)
			}
			var want []string
			for _, c := range tc.restarts {
				want = append(want, c+".service")
			}
			if got := f.restarts(); !slices.Equal(got, want) {
				t.Errorf("restarts %q, want %q", got, want)
			}
			if wantKubelet := map[bool]int{true: 1}[tc.want == "old"]; kubeletRestarts != wantKubelet {
				t.Errorf("the kubelet was restarted %d times, want %d", kubeletRestarts, wantKubelet)
			}
			switch {
			case tc.wantErr == "" && ce.RollbackErr != nil:
				t.Errorf("the rollback failed: %v", ce.RollbackErr)
			case tc.wantErr != "" && (ce.RollbackErr == nil || !strings.Contains(ce.RollbackErr.Error(), tc.wantErr)):
				t.Errorf("rollback error %v, want one containing %q", ce.RollbackErr, tc.wantErr)
			}
			if got := EtcdDataOf(s.EtcdData.DataDir); got != tc.want {
				t.Errorf("etcd's data is %q after the rollback, want %q", got, tc.want)
			}
			if chowned != (tc.want == "old") {
				t.Errorf("data put back: %v, want %v", chowned, tc.want == "old")
			}
			for _, c := range hostprocess.Components() {
				if f.program(c) != "/old/"+c {
					t.Errorf("%s runs %q after the rollback", c, f.program(c))
				}
			}
			stopped := slices.Contains(f.calls, "systemctl stop etcd.service")
			if stopped != (tc.want == "old") {
				t.Errorf("etcd stopped: %v, want %v (calls %q)", stopped, tc.want == "old", f.calls)
			}
		})
	}
}

// A rollback that restarted the controller manager or the scheduler, or
// put etcd's data back, returns once both lead again, and fails naming
// those that do not; one that touched neither reads no Lease.
func TestHostUnitsRollbackWaitsForLeaders(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sick      string
		members   int
		renewed   bool
		wantReads bool
		wantErr   string
	}{
		{name: "controller manager restored, leaders renew", sick: "/new/kube-controller-manager", members: 3, renewed: true, wantReads: true},
		{name: "controller manager restored, no leader", sick: "/new/kube-controller-manager", members: 3, wantReads: true,
			wantErr: `kube-controller-manager does not lead: not within 50ms: the Lease kube-system/kube-controller-manager is held by "node1_old"`},
		{name: "data put back, no leader", sick: "/new/kube-apiserver", members: 1, wantReads: true, wantErr: "kube-scheduler does not lead: "},
		{name: "API server restored, data kept", sick: "/new/kube-apiserver", members: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s, out := runningOld(t)
			f.sick[tc.sick] = true
			s.EtcdData = EtcdDataFixture(t, tc.members)
			reads := 0
			c := leasetest.Client(func(name string) (runtime.Object, error) {
				reads++
				if tc.renewed {
					return leasetest.Lease(name, "node1_new", time.Now()), nil
				}
				return leasetest.Lease(name, "node1_old", time.Now().Add(-time.Minute)), nil
			})
			s.Leaders = &leaderlease.Waiter{Client: c, Timeout: 50 * time.Millisecond, Interval: 5 * time.Millisecond, Out: out, Prefix: "[upgrade/units]"}
			err := s.Apply(context.Background(), testUnits(t, "new"))
			var ce *ComponentError
			if !errors.As(err, &ce) {
				t.Fatalf("Apply: %v", err)
			}
			switch {
			case tc.wantErr == "" && ce.RollbackErr != nil:
				t.Errorf("the rollback failed: %v", ce.RollbackErr)
			case tc.wantErr != "" && (ce.RollbackErr == nil || !strings.Contains(ce.RollbackErr.Error(), tc.wantErr)):
				t.Errorf("rollback error %v, want one containing %q", ce.RollbackErr, tc.wantErr)
			}
			if (reads > 0) != tc.wantReads {
				t.Errorf("%d reads of the Leases, want some: %v", reads, tc.wantReads)
			}
			if tc.renewed && !strings.Contains(out.String(), `[upgrade/units] kube-scheduler leads ("node1_new" holds kube-system/kube-scheduler)`) {
				t.Errorf("the output does not say the scheduler leads:\n%s", out)
			}
		})
	}
}

// An upgraded controller manager or scheduler is up once its Lease is
// renewed after its restart; one that does not lead in time fails the
// upgrade like one that is not healthy, and is rolled back.
func TestHostUnitsApplyWaitsForLeaders(t *testing.T) {
	for _, leading := range []bool{true, false} {
		t.Run(fmt.Sprintf("leading %v", leading), func(t *testing.T) {
			f, s, out := runningOld(t)
			var read []string
			c := leasetest.Client(func(name string) (runtime.Object, error) {
				read = append(read, name)
				if leading {
					return leasetest.Lease(name, "node1_new", time.Now()), nil
				}
				return leasetest.Lease(name, "node1_old", time.Now().Add(-time.Minute)), nil
			})
			s.Leaders = &leaderlease.Waiter{Client: c, Timeout: 50 * time.Millisecond, Interval: 5 * time.Millisecond, Out: out, Prefix: "[upgrade/units]"}
			err := s.Apply(context.Background(), testUnits(t, "new"))
			if leading {
				if err != nil {
					t.Fatal(err)
				}
				if got := slices.Compact(read); !slices.Equal(got, []string{"kube-controller-manager", "kube-scheduler"}) {
					t.Errorf("Leases read %q, want the controller manager's then the scheduler's", got)
				}
				if !strings.Contains(out.String(), `[upgrade/units] kube-controller-manager leads ("node1_new" holds kube-system/kube-controller-manager) after `) {
					t.Errorf("the output does not say the controller manager leads:\n%s", out)
				}
				return
			}
			var ce *ComponentError
			if !errors.As(err, &ce) || ce.Component != hostprocess.KubeControllerManager || !strings.Contains(ce.Err.Error(), "kube-controller-manager does not lead: not within 50ms") {
				t.Fatalf("Apply: %v", err)
			}
			for _, c := range hostprocess.Components() {
				if f.program(c) != "/old/"+c {
					t.Errorf("%s runs %q after the rollback", c, f.program(c))
				}
			}
		})
	}
}
