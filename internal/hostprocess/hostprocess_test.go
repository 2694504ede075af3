package hostprocess

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func pod(cmd []string, env []corev1.EnvVar, mounts ...[2]string) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Command: cmd, Env: env}}}}
	for i, m := range mounts {
		name := "v" + string(rune('a'+i))
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: m[0]}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: m[1]})
	}
	return p
}

func TestUnitRoundTrip(t *testing.T) {
	cmd := []string{"kube-apiserver", "--secure-port=6443", "--a=with space", `--b=quote"and\back`, "--c=100%", "--d=$HOME", "--e=", ";", "--f=tab\there"}
	env := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://p:3128"}, {Name: "NO_PROXY", Value: "a b,%c"}}
	data, err := Unit(KubeAPIServer, pod(cmd, env, [2]string{"/etc/kubernetes/pki", "/etc/kubernetes/pki"}), "/usr/local/bin/kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{Marker + "\n", "After=network-online.target etcd.service\n", "Restart=always\n", "WantedBy=multi-user.target\n",
		"ExecStart=/usr/local/bin/kube-apiserver \\\n  --secure-port=6443 \\\n", `"--c=100%%"`, `"--d=$$HOME"`, `Environment="NO_PROXY=a b,%%c"`} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %q:\n%s", want, text)
		}
	}
	p := filepath.Join(t.TempDir(), "kube-apiserver.service")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadUnit(p, KubeAPIServer)
	if err != nil || !ok {
		t.Fatalf("ReadUnit: %v, ours %v", err, ok)
	}
	want := append([]string{"/usr/local/bin/kube-apiserver"}, cmd[1:]...)
	if c := got.Spec.Containers[0]; !slices.Equal(c.Command, want) {
		t.Errorf("command read back\n%q\nwant\n%q", c.Command, want)
	}
	if e := got.Spec.Containers[0].Env; len(e) != 2 || e[1] != env[1] || e[0] != env[0] {
		t.Errorf("environment read back %v", e)
	}
}

func TestUnitRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		binary string
		want   string
	}{
		"moved mount":   {pod([]string{"etcd"}, nil, [2]string{"/data/etcd", "/var/lib/etcd"}), "/bin/etcd", "hostPath and mountPath must be the same"},
		"relative path": {pod([]string{"etcd"}, nil), "etcd", "not an absolute path"},
		"no command":    {pod(nil, nil), "/bin/etcd", "no command"},
		"valueFrom":     {pod([]string{"etcd"}, []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{}}}), "/bin/etcd", "valueFrom"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Unit(Etcd, tc.pod, tc.binary); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadUnitNotOurs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "etcd.service")
	if err := os.WriteFile(p, []byte("[Service]\nExecStart=/usr/bin/etcd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ReadUnit(p, Etcd); ok || err != nil {
		t.Errorf("ours %v, err %v; want a foreign unit", ok, err)
	}
	if _, _, err := ReadUnit(filepath.Join(t.TempDir(), "none"), Etcd); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing unit: %v", err)
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct{ component, out, want string }{
		{KubeAPIServer, "Kubernetes v1.37.2\n", "1.37.2"},
		{Etcd, "etcd Version: 3.7.0\nGit SHA: x\nGo Version: go1.26\n", "3.7.0"},
	} {
		if got, err := ParseVersion(tc.component, []byte(tc.out)); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.component, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ component, out string }{{KubeScheduler, "v1.37.2"}, {Etcd, "3.7.0"}} {
		if _, err := ParseVersion(tc.component, []byte(tc.out)); err == nil {
			t.Errorf("%s: %q parsed", tc.component, tc.out)
		}
	}
	if got := WantVersion(Etcd, "v1.37.2", "3.7.0-0"); got != "3.7.0" {
		t.Errorf("etcd wants %q", got)
	}
	if got := WantVersion(KubeScheduler, "v1.37.2", "3.7.0-0"); got != "1.37.2" {
		t.Errorf("scheduler wants %q", got)
	}
}

// recorder records systemctl calls and fails those in fail.
type recorder struct {
	calls []string
	fail  map[string]bool
}

func (r *recorder) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	call := strings.Join(append([]string{name}, args...), " ")
	r.calls = append(r.calls, call)
	if r.fail[call] {
		return []byte("boom\n"), errors.New("exit status 1")
	}
	return nil, nil
}

func TestUnitsLifecycle(t *testing.T) {
	root := t.TempDir()
	r := &recorder{}
	u := Units{Host: r, Root: root, Out: &strings.Builder{}}
	data := func(c string) []byte {
		d, err := Unit(c, pod([]string{c, "--x=1"}, nil), "/bin/"+c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range Components() {
		changed, err := u.Write(c, data(c))
		if err != nil || !changed {
			t.Fatalf("write %s: %v, %v", c, changed, err)
		}
		if err := u.Start(context.Background(), c, changed); err != nil {
			t.Fatal(err)
		}
	}
	if changed, err := u.Write(Etcd, data(Etcd)); changed || err != nil {
		t.Errorf("rewrite of the same unit: %v, %v", changed, err)
	}
	if err := u.Start(context.Background(), Etcd, false); err != nil {
		t.Fatal(err)
	}
	wantStart := []string{"systemctl daemon-reload", "systemctl enable etcd.service", "systemctl restart etcd.service"}
	if !slices.Equal(r.calls[:3], wantStart) || !slices.Equal(r.calls[len(r.calls)-2:], []string{"systemctl enable etcd.service", "systemctl start etcd.service"}) {
		t.Errorf("calls %q", r.calls)
	}
	// A foreign unit is neither overwritten nor removed.
	if err := os.WriteFile(UnitPath(root, KubeScheduler), []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(KubeScheduler, data(KubeScheduler)); err == nil {
		t.Errorf("a foreign unit was overwritten")
	}
	r.calls = nil
	r.fail = map[string]bool{"systemctl stop kube-apiserver.service": true}
	err := u.Remove(context.Background())
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("remove: %v", err)
	}
	wantRemove := []string{
		"systemctl stop kube-controller-manager.service", "systemctl disable kube-controller-manager.service",
		"systemctl stop kube-apiserver.service",
		"systemctl stop etcd.service", "systemctl disable etcd.service", "systemctl daemon-reload"}
	if !slices.Equal(r.calls, wantRemove) {
		t.Errorf("remove calls\n%q\nwant\n%q", r.calls, wantRemove)
	}
	left, _ := u.Installed()
	if !slices.Equal(left, []string{KubeAPIServer}) {
		t.Errorf("left %v, want the API server's unit that did not stop", left)
	}
	if _, err := os.Stat(UnitPath(root, KubeScheduler)); err != nil {
		t.Errorf("the foreign unit is gone: %v", err)
	}
	r.fail = nil
	if err := u.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left, _ := u.Installed(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// The versioned name comes first; the bare one serves a user who keeps
// one version.
func TestFindProgram(t *testing.T) {
	have := map[string]bool{"kube-apiserver": true}
	look := func(f string) (string, error) {
		if have[f] {
			return "/usr/local/bin/" + f, nil
		}
		return "", errors.New("not found")
	}
	if p, err := FindProgram(look, KubeAPIServer, "1.37.2"); err != nil || p != "/usr/local/bin/kube-apiserver" {
		t.Errorf("bare name: %q, %v", p, err)
	}
	have["kube-apiserver-v1.37.2"] = true
	if p, err := FindProgram(look, KubeAPIServer, "1.37.2"); err != nil || p != "/usr/local/bin/kube-apiserver-v1.37.2" {
		t.Errorf("versioned name: %q, %v", p, err)
	}
	if _, err := FindProgram(look, Etcd, "3.7.0"); err == nil || !strings.Contains(err.Error(), "neither etcd-v3.7.0 nor etcd is in the PATH") {
		t.Errorf("missing: %v", err)
	}
}

// showHost answers "systemctl show" with out.
type showHost struct{ out string }

func (h showHost) Run(context.Context, string, ...string) ([]byte, error) { return []byte(h.out), nil }

// Running reads MainPID and NRestarts as systemctl show prints them, the
// command line from /proc; NRestarts is -1 when systemd does not print it,
// and a process gone from /proc runs no more.
func TestUnitsRunning(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "42"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "42", "cmdline"), []byte("/usr/local/bin/etcd\x00--name=node1\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		out     string
		want    Service
		wantErr bool
	}{
		{out: "MainPID=42\nNRestarts=2\n", want: Service{PID: 42, Argv: []string{"/usr/local/bin/etcd", "--name=node1"}, Restarts: 2}},
		{out: "NRestarts=0\nMainPID=0\n", want: Service{Restarts: 0}},
		{out: "MainPID=42\n", want: Service{PID: 42, Argv: []string{"/usr/local/bin/etcd", "--name=node1"}, Restarts: -1}},
		{out: "MainPID=43\nNRestarts=5\n", want: Service{Restarts: 5}},
		{out: "ActiveState=active\n", wantErr: true},
	} {
		u := Units{Host: showHost{tc.out}, ProcDir: proc}
		got, err := u.Running(context.Background(), Etcd)
		if (err != nil) != tc.wantErr || got.PID != tc.want.PID || got.Restarts != tc.want.Restarts || !slices.Equal(got.Argv, tc.want.Argv) {
			t.Errorf("Running with %q = %+v, %v; want %+v", tc.out, got, err, tc.want)
		}
	}
}
