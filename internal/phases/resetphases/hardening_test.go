package resetphases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
)

// TestCleanupNodeRemovesHardening: reset removes what the CISHardening
// profile made (the approver's kubeconfig and program, the audit policy,
// the admission configuration, the etcd user kubeadm made), keeps an
// audit policy the administrator changed, and a dry run removes nothing.
func TestCleanupNodeRemovesHardening(t *testing.T) {
	d, root := testNode(t)
	const passwd, group = "root:x:0:0:root:/root:/bin/bash\n", "root:x:0:\n"
	for name, content := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(d.EtcDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rootless.EnsureAccount(d.EtcDir, cis.EtcdUser, cis.EtcdUserComment); err != nil {
		t.Fatal(err)
	}
	d.ApproverBinary = filepath.Join(root, "var/lib/kubeadm/kubeadm")
	files := map[string][]byte{
		cis.ApproverKubeconfig(d.KubernetesDir):                  []byte("kubeconfig"),
		cis.LegacyApproverKubeconfig(d.KubernetesDir):            []byte("kubeconfig"),
		filepath.Join(d.KubernetesDir, "audit-policy.yaml"):      []byte("the administrator's own policy"),
		filepath.Join(d.KubernetesDir, "admission-control.yaml"): cis.AdmissionConfig(),
		d.ApproverBinary: []byte("program"),
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	d.DryRun = true
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	out := d.Out.(*bytes.Buffer).String()
	for p := range files {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the dry run removed %s", p)
		}
		if !strings.Contains(out, "Would delete \""+p) {
			t.Errorf("the dry run does not name %s:\n%s", p, out)
		}
	}
	if !strings.Contains(out, `Would remove the user and group "etcd"`) {
		t.Errorf("the dry run does not name the etcd user:\n%s", out)
	}

	d.DryRun = false
	for range 2 {
		if err := runCleanupNode(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	for p := range files {
		_, err := os.Stat(p)
		if kept := strings.HasSuffix(p, "audit-policy.yaml"); kept != (err == nil) {
			t.Errorf("%s: kept %v, want %v", p, err == nil, kept)
		}
	}
	if _, err := os.Stat(filepath.Dir(d.ApproverBinary)); err == nil {
		t.Error("the approver's folder is left")
	}
	if b, _ := os.ReadFile(filepath.Join(d.EtcDir, "passwd")); string(b) != passwd {
		t.Errorf("passwd after reset: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(d.EtcDir, "group")); string(b) != group {
		t.Errorf("group after reset: %q", b)
	}
}
