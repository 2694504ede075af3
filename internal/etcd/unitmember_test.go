package etcd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
)

// Without a manifest, a snapshot reaches the member its unit of a control
// plane of host processes runs; without a unit either, the error is the
// manifest's.
func TestUnitMember(t *testing.T) {
	env := Node{UnitRoot: t.TempDir()}
	noManifest := errors.New("no etcd manifest")
	if _, err := env.unitMember(noManifest); err != noManifest {
		t.Errorf("without a unit: %v", err)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"etcd", "--name=node1", "--advertise-client-urls=https://10.0.0.5:2379"}}}}}
	data, err := hostprocess.Unit(hostprocess.Etcd, pod, "/usr/local/bin/etcd")
	if err != nil {
		t.Fatal(err)
	}
	p := hostprocess.UnitPath(env.UnitRoot, hostprocess.Etcd)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := env.unitMember(noManifest)
	if err != nil || m.Name != "node1" || len(m.ClientURLs) != 1 || m.ClientURLs[0] != "https://10.0.0.5:2379" {
		t.Errorf("member %+v, %v", m, err)
	}
}
