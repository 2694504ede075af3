package testbed

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
)

// The stand-in reads kubeadm's units back into the command line they were
// made from: its own reading of systemd's rules checks kubeadm's quoting.
func TestUnitWordsReadKubeadmUnits(t *testing.T) {
	argv := []string{"kube-apiserver", "--a=b", "--c=with space", `--d="q"\`, "--e=50%", "--f=$X", ";"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: argv, Env: []corev1.EnvVar{{Name: "NO_PROXY", Value: "a b"}}}}}}
	data, err := hostprocess.Unit(hostprocess.KubeAPIServer, pod, "/usr/local/bin/kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	var u serviceUnit
	section := ""
	for _, line := range unitLines(string(data)) {
		if line[0] == '[' {
			section = line
			continue
		}
		if section != "[Service]" {
			continue
		}
		switch k, v, _ := strings.Cut(line, "="); k {
		case "ExecStart":
			u.argv, err = unitWords(v, true)
		case "Environment":
			u.env, err = unitWords(v, false)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := append([]string{"/usr/local/bin/kube-apiserver"}, argv[1:]...)
	if !slices.Equal(u.argv, want) || !slices.Equal(u.env, []string{"NO_PROXY=a b"}) {
		t.Errorf("read back\n%q %q\nwant\n%q", u.argv, u.env, want)
	}
}

func TestReadServiceUnitSettings(t *testing.T) {
	for _, tc := range []struct {
		text    string
		restart bool
		delay   time.Duration
	}{
		{"[Service]\nExecStart=/bin/x\n", false, systemdDefaultRestartDelay},
		{"[Service]\nExecStart=/bin/x\nRestart=always\nRestartSec=5\n", true, 5 * time.Second},
		{"[Service]\nExecStart=-/bin/x\nRestart=on-failure\nRestartSec=250ms\n", true, 250 * time.Millisecond},
	} {
		u, err := parseServiceUnit("x.service", tc.text)
		if err != nil || u.restart != tc.restart || u.restartDelay != tc.delay || !slices.Equal(u.argv, []string{"/bin/x"}) {
			t.Errorf("%q: %+v, %v", tc.text, u, err)
		}
	}
	if _, err := parseServiceUnit("x.service", "[Service]\nExecStart=/bin/x \"open\n"); err == nil {
		t.Errorf("an unterminated quote was read")
	}
	if _, ok, err := readServiceUnit(filepath.Join(t.TempDir(), "none.service")); ok || err != nil {
		t.Errorf("missing unit: %v, %v", ok, err)
	}
}
