package initphases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/kubelet/kubelettest"
)

func TestCertsRenewalPhase(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dryRun    bool
		wantCalls string
		wantOut   []string
	}{
		{
			name:      "installs and enables the timer",
			wantCalls: "systemctl daemon-reload,systemctl enable --now kubeadm-certs-renewal.timer",
			wantOut:   []string{`[certs-renewal] Writing "/etc/systemd/system/kubeadm-certs-renewal.timer"`, "Every day,"},
		},
		{
			name: "dry run: shown, not enabled", dryRun: true,
			wantOut: []string{
				`[dryrun] Would write file "/etc/systemd/system/kubeadm-certs-renewal.service" with content:`,
				"\nExecStart=/usr/bin/kubeadm certs renew expiring\n",
				`[dryrun] Would write file "/etc/systemd/system/kubeadm-certs-renewal.timer" with content:`,
				"\nRandomizedDelaySec=21600\n",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var out bytes.Buffer
			d := &Data{
				Cfg:         &kubeadm.InitConfiguration{},
				KubeadmPath: "/usr/bin/kubeadm",
				SystemRoot:  root,
				DryRun:      tc.dryRun,
				Out:         &out,
			}
			if tc.dryRun {
				d.DryRunDir = t.TempDir()
			}
			h := &kubelettest.SystemdHost{}
			p := certsRenewalPhase(h)
			if err := p.Run(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.Calls, ","); got != tc.wantCalls {
				t.Errorf("calls %q, want %q", got, tc.wantCalls)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			_, err := os.Stat(filepath.Join(root, "etc/systemd/system/kubeadm-certs-renewal.timer"))
			if installed := err == nil; installed == tc.dryRun {
				t.Errorf("installed: %v under dry run %v", installed, tc.dryRun)
			}
		})
	}
}

// TestCertsRenewalPhaseIsSkippable: the phase is part of init, after the
// addons and before the join command, so --skip-phases names it.
func TestCertsRenewalPhaseIsSkippable(t *testing.T) {
	var names []string
	for _, p := range Phases() {
		if !p.Hidden {
			names = append(names, strings.Fields(p.Name)[0])
		}
	}
	if got := strings.Join(names[len(names)-3:], ","); got != "addon,certs-renewal,show-join-command" {
		t.Errorf("last phases %s", got)
	}
}
