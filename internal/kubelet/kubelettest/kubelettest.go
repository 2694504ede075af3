// Package kubelettest holds a fake kubelet.Host for tests: a machine run
// by systemd that records the commands it is asked to run. Tests only;
// product code never imports it.
package kubelettest

import (
	"context"
	"strings"
)

// SystemdHost is a machine run by systemd whose commands all succeed.
// Calls lists each command run, its words joined by spaces.
type SystemdHost struct{ Calls []string }

// Exists reports only systemd's run folder.
func (h *SystemdHost) Exists(path string) bool { return path == "/run/systemd/system" }

// Run records the command and succeeds.
func (h *SystemdHost) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	h.Calls = append(h.Calls, strings.Join(append([]string{name}, args...), " "))
	return nil, nil
}
