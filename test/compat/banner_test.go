//go:build compat

package compat

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The closing lines of "kubeadm init" are an interface: scripts and
// configuration-management roles grep them and take the join commands from
// them. TestInitClosingLines runs init as a dry run (chrooted with
// --rootfs) with both binaries and compares those lines byte for byte.

const closingLinesConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
- token: bcdefg.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 192.0.2.10
nodeRegistration:
  name: node1
  criSocket: unix:///run/nonexistent.sock
  ignorePreflightErrors: [all]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + k8sVersion + `
`

var (
	// The CA is made afresh by each run.
	caHash = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	// The dry-run folder is random (and ours is elsewhere).
	adminCopy = regexp.MustCompile(`sudo cp -i \S+ `)
)

// closingLines is the part of init's output from the first success line
// to the end of the last join command, normalized.
func closingLines(out string) string {
	i := strings.Index(out, "\nYour Kubernetes control-plane has initialized successfully!\n")
	if i < 0 {
		return ""
	}
	lines := strings.Split(out[i:], "\n")
	end := 0
	for n, l := range lines {
		if strings.HasPrefix(l, "\t--discovery-token-ca-cert-hash ") && !strings.HasSuffix(l, "\\") {
			end = n + 1
		}
	}
	s := strings.Join(lines[:end], "\n")
	s = caHash.ReplaceAllString(s, "sha256:<hash>")
	return adminCopy.ReplaceAllString(s, "sudo cp -i <admin.conf> ")
}

func TestInitClosingLines(t *testing.T) {
	requireSetup(t)
	if os.Geteuid() != 0 {
		t.Skip("--rootfs needs root")
	}
	endpoint := "controlPlaneEndpoint: cp.example.test:6443\n"
	key := "certificateKey: 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
	withKey := strings.Replace(closingLinesConfig, "localAPIEndpoint:", strings.TrimSuffix(key, "\n")+"\nlocalAPIEndpoint:", 1)
	cases := []struct {
		name   string
		config string
		flags  []string
	}{
		{"worker only", closingLinesConfig, nil},
		{"worker only, token withheld", closingLinesConfig, []string{"--skip-token-print"}},
		{"control plane, certificates copied by hand", closingLinesConfig + endpoint, nil},
		{"control plane, endpoint without a port", closingLinesConfig + "controlPlaneEndpoint: cp.example.test\n", nil},
		{"control plane, key given, not uploaded", withKey + endpoint, nil},
		{"control plane, certificates uploaded", withKey + endpoint, []string{"--upload-certs"}},
		{"control plane, secrets withheld", withKey + endpoint, []string{"--upload-certs", "--skip-token-print", "--skip-certificate-key-print"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(file, []byte(c.config), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"init", "--dry-run", "--config", "/config.yaml"}, c.flags...)
			ours := invoke(t, oursBin, append(args, "--rootfs", newRoot(t, file, k8sVersion))...)
			up := invoke(t, upstreamBin, append(args, "--rootfs", newRoot(t, file, k8sVersion))...)
			var d diffs
			compareExit(&d, ours, up)
			o, u := closingLines(ours.stdout), closingLines(up.stdout)
			if u == "" {
				d.add("upstream printed no success line")
			}
			if o != u {
				d.add("closing lines differ:\n--- ours\n%s\n--- upstream\n%s", o, u)
			}
			if len(d.lines) > 0 {
				t.Errorf("kubeadm %s:\n  %s", strings.Join(args, " "), strings.Join(d.lines, "\n  "))
			}
		})
	}
}
