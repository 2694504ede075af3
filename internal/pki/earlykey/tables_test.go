package earlykey_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/pki/earlykey"
)

// TestTablesMatchWriters: earlykey keeps its own copy of which phase
// writes which key or kubeconfig file (it initialises before, and must not
// depend on, the packages that write them). The copy must stay that of
// pki's certificate table and init's kubeconfig phases.
func TestTablesMatchWriters(t *testing.T) {
	wantCerts := map[string]string{pki.ServiceAccountKeyBase: pki.ServiceAccountKeyBase + ".key"}
	for _, c := range pki.CertTable() {
		wantCerts[c.Name] = c.BaseName + ".key"
	}
	if !maps.Equal(earlykey.CertKeyFiles, wantCerts) {
		t.Errorf("earlykey's key files\n %v\npki's table\n %v", earlykey.CertKeyFiles, wantCerts)
	}

	var phases []string
	for _, p := range initphases.KubeconfigPhase().Phases {
		if p.Name != "all" {
			phases = append(phases, p.Name)
		}
	}
	slices.Sort(phases)
	if got := slices.Sorted(maps.Keys(earlykey.KubeconfigFiles)); !slices.Equal(got, phases) {
		t.Errorf("earlykey's kubeconfig phases %v, init's %v", got, phases)
	}
	wantFiles := []string{kubeconfig.AdminFile, kubeconfig.SuperAdminFile, kubeconfig.KubeletFile, kubeconfig.ControllerManagerFile, kubeconfig.SchedulerFile}
	slices.Sort(wantFiles)
	if got := slices.Sorted(maps.Values(earlykey.KubeconfigFiles)); !slices.Equal(got, wantFiles) {
		t.Errorf("earlykey's kubeconfig files %v, kubeconfig's %v", got, wantFiles)
	}

	for _, n := range earlykey.JoinCertPhases {
		if _, ok := wantCerts[n]; !ok {
			t.Errorf("join certificate %q is not in pki's table", n)
		}
	}
	for _, n := range earlykey.JoinKubeconfigs {
		if _, ok := earlykey.KubeconfigFiles[n]; !ok {
			t.Errorf("join kubeconfig %q is not a kubeconfig phase", n)
		}
	}
}
