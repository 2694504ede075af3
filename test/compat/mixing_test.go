//go:build compat

package compat

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mixValues are values the flags' parsers accept, for the flags whose
// value is checked when the command line is parsed (before kubeadm looks
// at --config).
var mixValues = map[string]string{
	"feature-gates":                "RootlessControlPlane=true",
	"certificate-key":              "e6a2eb8581237ab72a4f494f30285ec12a9694d750b9785706a83bfcbbbd2204",
	"token":                        "abcdef.0123456789abcdef",
	"discovery-token":              "abcdef.0123456789abcdef",
	"tls-bootstrap-token":          "abcdef.0123456789abcdef",
	"discovery-token-ca-cert-hash": "sha256:aaaa",
	"apiserver-advertise-address":  "192.0.2.9",
	"control-plane-endpoint":       "lb.example.test:6443",
	"pod-network-cidr":             "10.0.0.0/16",
	"service-cidr":                 "10.96.0.0/16",
	"kubernetes-version":           "v1.36.3",
	"cri-socket":                   "unix:///run/nonexistent.sock",
	"ignore-preflight-errors":      "all",
	"output":                       "yaml",
	"skip-phases":                  "preflight",
}

// TestConfigMixing runs every command that takes --config with --config
// and each of its other flags in turn, and checks that ours refuses the
// mix ("can not mix '--config' with arguments [flag]") exactly where
// upstream's does. Every invocation runs chrooted (--rootfs) into a folder
// of its own holding the configuration, so whatever a command goes on to
// do touches nothing of the host's.
func TestConfigMixing(t *testing.T) {
	requireSetup(t)
	if os.Geteuid() != 0 {
		t.Skip("--rootfs needs root")
	}
	tree := commandTree(t, upstreamBin)
	config, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "config", "valid-init-minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{"config": true, "help": true, "rootfs": true, "v": true, "vmodule": true}
	checked := 0
	var problems []string
	for _, path := range slices.Sorted(maps.Keys(tree)) {
		page := tree[path]
		if _, ok := page.flags["config"]; !ok || len(page.commands) > 0 && !slices.Contains(page.commands, "phase") {
			continue
		}
		for _, flag := range slices.Sorted(maps.Keys(page.flags)) {
			if skip[flag] {
				continue
			}
			arg := "--" + flag
			if v, ok := mixValues[flag]; ok {
				arg += "=" + v
			} else if typ := page.flags[flag].typ; typ != "bool" {
				arg += "=" + map[string]string{"duration": "1h", "int": "1", "int32": "1"}[typ]
				if strings.HasSuffix(arg, "=") {
					arg += "x"
				}
			}
			args := append(strings.Fields(path), "--config", "/config.yaml", arg)
			// A mix both accept runs the command: as a dry run where there
			// is one (init would otherwise wait for a kubelet).
			if _, ok := page.flags["dry-run"]; ok && flag != "dry-run" {
				args = append(args, "--dry-run")
			}
			refused := func(bin string) bool {
				root := t.TempDir()
				if err := os.WriteFile(filepath.Join(root, "config.yaml"), config, 0o600); err != nil {
					t.Fatal(err)
				}
				r := invoke(t, bin, append(args, "--rootfs", root)...)
				return strings.Contains(r.stderr, "can not mix '--config' with arguments ["+flag+"]")
			}
			checked++
			if o, u := refused(oursBin), refused(upstreamBin); o != u {
				problems = append(problems, "kubeadm "+strings.Join(args, " ")+": "+map[bool]string{true: "ours refuses the mix, upstream's takes it", false: "upstream's refuses the mix, ours takes it"}[o])
			}
		}
	}
	t.Logf("%d flags checked next to --config", checked)
	if len(problems) > 0 {
		t.Errorf("flags mixed with --config:\n  %s", strings.Join(problems, "\n  "))
	}
}
