package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// flagsAllowedWithConfig are the flags that may accompany --config: they
// either do not touch the configuration or only select what to run.
// Every other flag that also exists as a configuration field is refused
// next to --config, as upstream kubeadm does, so a value is never silently
// taken from one place and ignored in the other.
var flagsAllowedWithConfig = map[string]bool{
	"config":                      true,
	"ignore-preflight-errors":     true,
	"dry-run":                     true,
	"kubeconfig":                  true,
	"node-name":                   true,
	"kubeconfig-dir":              true,
	"upload-certs":                true,
	"print-join-command":          true,
	"rootfs":                      true,
	"v":                           true,
	"vmodule":                     true,
	"yes":                         true,
	"output":                      true,
	"allow-missing-template-keys": true,
	"show-managed-fields":         true,
	"context-lines":               true,
}

// checkMixedArguments refuses flags set next to --config that the
// configuration file should hold instead. Flags whose names start with
// "skip-" are always allowed. --config is looked up in fs; more holds
// further flags of the command (those only its phases offer).
func checkMixedArguments(fs *pflag.FlagSet, more ...*pflag.FlagSet) error {
	if f := fs.Lookup("config"); f == nil || !f.Changed {
		return nil
	}
	var mixed []string
	// Changed rather than Visit: a phase sub-command parses the parent's
	// flags through its own flag set, which fs does not see as set.
	for _, set := range append([]*pflag.FlagSet{fs}, more...) {
		set.VisitAll(func(f *pflag.Flag) {
			if !f.Changed || flagsAllowedWithConfig[f.Name] || strings.HasPrefix(f.Name, "skip-") {
				return
			}
			mixed = append(mixed, f.Name)
		})
	}
	if len(mixed) > 0 {
		return fmt.Errorf("can not mix '--config' with arguments %v", mixed)
	}
	return nil
}
