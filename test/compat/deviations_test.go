//go:build compat

package compat

import (
	"regexp"
	"strings"
)

// Deliberate differences from upstream kubeadm v1.37.2. Each one is a choice
// made for the user (or required by the project's issues), not an accident;
// the check still runs both binaries and verifies the difference is exactly
// the documented one, so any other difference is still reported.

// validationExitCode is what we return for configuration that does not
// validate. kubeadm documents exit code 3 for validation errors, but
// upstream's config commands lose the error's type on the way out and exit
// with 1; we keep the documented code.
const validationExitCode = 3

// stricterFiles are inputs upstream accepts and we refuse on purpose, with
// the field path our error must name.
var stricterFiles = map[string]string{
	// An unknown taint effect only fails when the kubelet registers the
	// node, long after init has written everything.
	"stricter-taint-effect.yaml": "nodeRegistration.taints[0].effect",
	// Likewise a taint key (or value) the API server would refuse.
	"stricter-taint-key.yaml": "nodeRegistration.taints[0].key",
}

// warningFiles are inputs both accept, where ours warns (naming the field)
// and upstream says nothing.
var warningFiles = map[string]string{
	// A pod network add-on with its own address management could give pods
	// addresses of the Service range.
	"valid-overlapping-subnets.yaml":           "networking.podSubnet",
	"valid-dual-stack-kubernetes-example.yaml": "networking.podSubnet",
}

// migrateSucceedsWhereUpstreamFails are inputs whose migration upstream
// refuses because of its own bug; we write the migrated file. (Upstream
// v1.37 migrates an UpgradeConfiguration, which v1.36 refused.)
var migrateSucceedsWhereUpstreamFails = map[string]bool{}

// upstreamZeroHealthCheck: when migrating a v1beta4 InitConfiguration,
// upstream writes timeouts.controlPlaneComponentHealthCheck as 0s whatever
// the input said (an explicit 5m0s included). A 0s wait is not what the
// user wrote or the default; we keep the input's value or the 4m0s default.
func upstreamZeroHealthCheck(name string, ours, up any) {
	if name != "initConfiguration" {
		return
	}
	um, _ := up.(map[string]any)
	om, _ := ours.(map[string]any)
	ut, _ := um["timeouts"].(map[string]any)
	ot, _ := om["timeouts"].(map[string]any)
	if ut == nil || ot == nil {
		return
	}
	if ut["controlPlaneComponentHealthCheck"] == "0s" {
		ut["controlPlaneComponentHealthCheck"] = ot["controlPlaneComponentHealthCheck"]
	}
}

// extraFlagCases are invocations only we accept: "config print
// join-defaults --component-configs" also prints the kubelet defaults a
// joining node gets; upstream has the flag on init-defaults only.
var extraFlagCases = map[string]bool{
	"join-defaults --component-configs KubeletConfiguration": true,
}

// projectVersion is the extra field "kubeadm version" carries to name this
// implementation's own release next to the Kubernetes release it deploys.
const projectVersionKey = "projectVersion"

var projectVersionText = regexp.MustCompile(`, ProjectVersion:"[^"]*"`)

func dropProjectVersionText(s string) string { return projectVersionText.ReplaceAllString(s, "") }

// sameVerdict reports whether two exit codes mean the same outcome once
// the documented exit-code difference is taken into account.
func sameVerdict(ours, up int) bool {
	return ours == up || (ours == validationExitCode && up == 1)
}

func isStricter(base string) (string, bool) {
	p, ok := stricterFiles[base]
	return p, ok
}

func hasField(msg, path string) bool { return strings.Contains(msg, path) }
