package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/internal/version"
)

// TestUpgradeBadInput checks that the upgrade commands refuse bad input
// before they reach a cluster: an invalid UpgradeConfiguration is a
// validation error (exit code 3) naming the file and the field.
func TestUpgradeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "upgrade.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\napply:\n  imagePullPolicy: Sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args     []string
		code     int
		contains []string
	}{
		{[]string{"upgrade", "apply", "v1.36.3", "--config", bad}, 3, []string{bad, "apply.imagePullPolicy", "Sometimes"}},
		{[]string{"upgrade", "node", "--config", bad}, 3, []string{bad, "apply.imagePullPolicy"}},
		{[]string{"upgrade", "plan", "-o", "xml"}, 1, []string{`unknown output format "xml"`}},
		{[]string{"upgrade", "plan", "--kubeconfig", filepath.Join(dir, "missing.conf")}, 1, []string{"missing.conf"}},
		{[]string{"upgrade", "apply", "v1.36.3", "v1.36.4"}, 1, []string{"accepts at most 1 arg"}},
		{[]string{"upgrade", "apply", "-y", "--kubeconfig", filepath.Join(dir, "missing.conf")}, 1, []string{"needs the version to upgrade to"}},
		// Flags the UpgradeConfiguration holds cannot come with --config.
		{[]string{"upgrade", "apply", "--config", good, "--force", "--etcd-upgrade=false"}, 1, []string{"can not mix '--config' with arguments [etcd-upgrade force]"}},
		{[]string{"upgrade", "node", "--config", good, "--patches", dir}, 1, []string{"can not mix '--config' with arguments [patches]"}},
		{[]string{"upgrade", "plan", "--config", good, "--allow-experimental-upgrades"}, 1, []string{"can not mix '--config' with arguments [allow-experimental-upgrades]"}},
		{[]string{"upgrade", "plan", "--config", good, "-o", "yaml", "--kubeconfig", filepath.Join(dir, "missing.conf")}, 1, []string{"missing.conf"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not mention %q", errOut, want)
				}
			}
		})
	}
}

func TestTargetVersion(t *testing.T) {
	env := config.Environment{ResolveVersion: func(_ context.Context, v string) (string, error) {
		if v == "stable-1.36" {
			return "v1.36.9", nil
		}
		return v, nil
	}}
	for _, tt := range []struct {
		args       []string
		fromConfig string
		want       string
	}{
		{nil, "", version.KubernetesVersion},
		{nil, "v1.36.1", "v1.36.1"},
		{[]string{"v1.36.2"}, "v1.36.1", "v1.36.2"},
		{[]string{"stable-1.36"}, "", "v1.36.9"},
	} {
		got, err := targetVersion(context.Background(), env, tt.args, tt.fromConfig)
		if err != nil || got != tt.want {
			t.Errorf("targetVersion(%v, %q) = %q, %v; want %q", tt.args, tt.fromConfig, got, err, tt.want)
		}
	}
}

// TestPlanRequestTakesTheConfiguration: the plan settings of an
// UpgradeConfiguration count as the flags do (upstream refuses both at
// once); without either, the defaults hold.
func TestPlanRequestTakesTheConfiguration(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		args []string // flags and arguments of "upgrade plan"
		plan kubeadm.UpgradePlanConfiguration
		want upgrade.PlanRequest
	}{
		{name: "defaults", want: upgrade.PlanRequest{EtcdUpgrade: true}},
		{name: "flags", args: []string{"v1.36.9", "--allow-experimental-upgrades", "--allow-release-candidate-upgrades", "--print-config", "--etcd-upgrade=false"},
			want: upgrade.PlanRequest{Asked: "v1.36.9", AllowExperimental: true, AllowRC: true, PrintConfig: true}},
		{name: "configuration", plan: kubeadm.UpgradePlanConfiguration{KubernetesVersion: "v1.36.8", AllowExperimentalUpgrades: &yes, AllowRCUpgrades: &yes, PrintConfig: &yes, EtcdUpgrade: &no},
			want: upgrade.PlanRequest{Asked: "v1.36.8", AllowExperimental: true, AllowRC: true, PrintConfig: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newUpgradePlanCmd(Streams{})
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			o := &upgradeOptions{}
			// The command's options are not reachable from outside: read
			// the flags back into a fresh set of options.
			f := cmd.Flags()
			o.allowExperimental, _ = f.GetBool("allow-experimental-upgrades")
			o.allowRC, _ = f.GetBool("allow-release-candidate-upgrades")
			o.printConfig, _ = f.GetBool("print-config")
			o.etcdUpgrade, _ = f.GetBool("etcd-upgrade")
			up := &kubeadm.UpgradeConfiguration{Plan: tc.plan}
			got, err := o.planRequest(f, up, f.Args())
			if err != nil {
				t.Fatal(err)
			}
			if got.Asked != tc.want.Asked || got.AllowExperimental != tc.want.AllowExperimental || got.AllowRC != tc.want.AllowRC ||
				got.PrintConfig != tc.want.PrintConfig || got.EtcdUpgrade != tc.want.EtcdUpgrade {
				t.Errorf("request %+v, want %+v", got, tc.want)
			}
		})
	}
}
