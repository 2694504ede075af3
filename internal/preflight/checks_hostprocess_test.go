package preflight

import (
	"context"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

func TestHostProcessChecks(t *testing.T) {
	cfg := &kubeadm.ClusterConfiguration{KubernetesVersion: "v1.37.2", ImageRepository: "registry.k8s.io"}
	cfg.Etcd.Local = &kubeadm.LocalEtcd{}
	h := &fakeHost{
		dirs:   []string{"/run/systemd/system"},
		files:  map[string]string{"/etc/systemd/system/kube-scheduler.service": "x"},
		inPath: map[string]bool{"etcd": true, "kube-apiserver": true, "kube-controller-manager": true},
		commands: map[string]fakeCommand{
			"/usr/bin/etcd --version":                    {out: "etcd Version: 3.7.0\nGit SHA: x\n"},
			"/usr/bin/kube-apiserver --version":          {out: "Kubernetes v1.37.2\n"},
			"/usr/bin/kube-controller-manager --version": {out: "Kubernetes v1.37.1\n"},
		},
	}
	results := map[string]string{}
	var names []string
	for _, c := range HostProcessChecks(h, cfg) {
		names = append(names, c.Name)
		r := c.Run(context.Background())
		var errs []string
		for _, e := range r.Errors {
			errs = append(errs, e.Error())
		}
		results[c.Name] = strings.Join(errs, "; ")
	}
	if len(names) != 9 || names[0] != "HostProcessInitSystem" || names[1] != "FileAvailable--etc-systemd-system-etcd.service" || names[2] != "ControlPlaneBinary-etcd" {
		t.Errorf("names %q", names)
	}
	for name, want := range map[string]string{
		"HostProcessInitSystem":                                    "",
		"ControlPlaneBinary-etcd":                                  "",
		"ControlPlaneBinary-kube-apiserver":                        "",
		"ControlPlaneBinary-kube-controller-manager":               "is version 1.37.1; the cluster needs 1.37.2",
		"ControlPlaneBinary-kube-scheduler":                        "kube-scheduler was not found in the system path",
		"FileAvailable--etc-systemd-system-kube-scheduler.service": "already exists",
		"FileAvailable--etc-systemd-system-etcd.service":           "",
	} {
		if got := results[name]; (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if r := HostProcessInitSystem(&fakeHost{}).Run(context.Background()); len(r.Errors) == 0 {
		t.Errorf("no systemd passed")
	}
	cfg.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{}}
	if n := len(HostProcessChecks(h, cfg)); n != 7 {
		t.Errorf("with an external etcd: %d checks, want 7", n)
	}
}
