package upgradephases

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// hostProcessConfig is a cluster of host processes at version.
func hostProcessConfig(version string) string {
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + version + `
featureGates:
  HostProcessControlPlane: true
`
}

// On a node of host processes, "upgrade diff" compares the units on disk
// with those the upgrade would write: here the new ones name the
// target's versioned programs.
func TestDiffUnits(t *testing.T) {
	root := t.TempDir()
	d := &Data{
		KubernetesDir: root, ManifestDir: filepath.Join(root, "manifests"), CertDir: filepath.Join(root, "pki"),
		SystemRoot: filepath.Join(root, "system"), Out: &bytes.Buffer{}, Err: &bytes.Buffer{},
		Node: &upgrade.LocalNode{ControlPlane: true, HostProcesses: true},
	}
	// The units init wrote at v1.36.3, with the programs' bare names.
	d.Cfg = configtest.InitConfiguration(t, hostProcessConfig("v1.36.3"), "10.0.0.5")
	d.Host = programHost{programs: map[string]string{"kube-apiserver": "", "kube-controller-manager": "", "kube-scheduler": ""}}
	for _, c := range hostprocess.Components()[1:] {
		data, _, err := initphases.BuildUnit(d.InitView(), c)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, hostprocess.UnitPath(d.SystemRoot, c), string(data))
	}
	d.initView = nil
	d.Cfg = configtest.InitConfiguration(t, hostProcessConfig("v1.37.2"), "10.0.0.5")
	d.Host = programHost{programs: map[string]string{"kube-apiserver-v1.37.2": "", "kube-controller-manager-v1.37.2": "", "kube-scheduler-v1.37.2": ""}}
	var out bytes.Buffer
	if err := diffFiles(d, &out, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range hostprocess.Components()[1:] {
		for _, want := range []string{
			"--- " + hostprocess.UnitPath(d.SystemRoot, c) + "\n+++ new unit\n",
			"-ExecStart=/usr/local/bin/" + c + " \\\n+ExecStart=/usr/local/bin/" + c + "-v1.37.2 \\\n",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the diff lacks %q:\n%s", want, out.String())
			}
		}
	}
	if _, err := os.Stat(d.ManifestDir); !os.IsNotExist(err) {
		t.Errorf("the diff made the manifest folder (%v)", err)
	}
	// Nothing to change: no diff.
	for _, c := range hostprocess.Components()[1:] {
		data, _, err := initphases.BuildUnit(d.InitView(), c)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, hostprocess.UnitPath(d.SystemRoot, c), string(data))
	}
	out.Reset()
	if err := diffFiles(d, &out, 3); err != nil || out.Len() > 0 {
		t.Errorf("diff of up-to-date units: %v\n%s", err, out.String())
	}
}
