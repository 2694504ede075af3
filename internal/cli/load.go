package cli

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/patches"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// readConfig reads a configuration file and reports what the decoder
// tolerated: unknown or duplicated fields (lenient mode) and old format
// versions (unless quiet).
func readConfig(env config.Environment, path string, strict config.Strictness, quietDeprecations bool) (*config.Documents, error) {
	return readConfigAllowing(env, path, strict, quietDeprecations, false)
}

// readConfigAllowing is readConfig that, with allowExperimental, also
// takes documents of an experimental API version (kubeadm.k8s.io/v1), as
// the commands with --allow-experimental-api do; otherwise they are
// refused.
func readConfigAllowing(env config.Environment, path string, strict config.Strictness, quietDeprecations, allowExperimental bool) (*config.Documents, error) {
	docs, err := config.ReadFile(path, strict)
	if err != nil {
		return nil, err
	}
	if len(docs.Experimental) > 0 && !allowExperimental {
		return nil, fmt.Errorf("%s: %s is experimental and not allowed here; commands with --allow-experimental-api take it", path, docs.Experimental[0])
	}
	warnAll(env, path, docs.Warnings)
	if !quietDeprecations {
		warnAll(env, path, docs.Deprecations)
	}
	return docs, nil
}

// loadInitConfig builds the validated init configuration of a command like
// "config images list --config" or "init --config": the file's
// InitConfiguration and ClusterConfiguration with every default applied.
// Documents of other kinds are ignored with a warning; a file without
// either kind is refused.
func loadInitConfig(ctx context.Context, env config.Environment, docs *config.Documents, opts config.DefaultOptions) (*kubeadm.InitConfiguration, error) {
	warnUnused(env, docs, v1beta4.KindInitConfiguration, v1beta4.KindClusterConfiguration, config.KindKubelet, config.KindKubeProxy)
	if docs.Init == nil && docs.Cluster == nil {
		return nil, exitcode.ValidationError(fmt.Errorf("%s: neither an InitConfiguration nor a ClusterConfiguration document was found in the file", docs.Source))
	}
	cfg, err := env.InitConfiguration(ctx, docs, opts)
	if err != nil {
		return nil, err
	}
	if err := validationError(docs.Source, validation.ValidateInitConfiguration(cfg)); err != nil {
		return nil, err
	}
	warnAll(env, "", validation.ClusterConfigurationWarnings(&cfg.ClusterConfiguration))
	return cfg, nil
}

// warnUnused warns, in the file's order, of each document of docs whose
// kind is not among used: the command ignores it, as upstream's says too.
func warnUnused(env config.Environment, docs *config.Documents, used ...string) {
	for _, kind := range docs.Unused(used...) {
		env.Warn("%s: ignoring the %s document: this command does not use it", docs.Source, kind)
	}
}

// warnAll reports each message as a warning, prefixed with its source.
func warnAll(env config.Environment, source string, msgs []string) {
	for _, m := range msgs {
		if source != "" {
			m = source + ": " + m
		}
		env.Warn("%s", m)
	}
}

// mergeIgnoredPreflightErrors merges --ignore-preflight-errors with the
// configuration's list (validated, as ValidateIgnorePreflightErrors does),
// stores the result back into the configuration and returns it as a set.
func mergeIgnoredPreflightErrors(fromFlags []string, fromConfig *[]string) (sets.Set[string], error) {
	ignored, errs := validation.ValidateIgnorePreflightErrors(fromFlags, *fromConfig)
	if err := validationError("flags", errs); err != nil {
		return nil, err
	}
	*fromConfig = ignored
	return sets.New(ignored...), nil
}

// checkPatches refuses, before a command changes anything, a patches
// folder it could not read (dir "" is none). Upstream kubeadm reads it
// only when the first patched file is made, after the certificates and
// kubeconfig files are written.
func checkPatches(dir string) error {
	if dir == "" {
		return nil
	}
	return patches.Check(dir)
}
