package hostprocess

import (
	"errors"
	"fmt"
	"path/filepath"
)

// ProgramNames are the names the program of component at version (no
// "v") is looked up by in the PATH, first found first: the versioned name
// ("kube-apiserver-v1.37.2", "etcd-v3.7.0"), which lets two versions be
// installed side by side so that an upgrade can go back to the one it
// replaces, then the bare name, for a user who keeps one version.
func ProgramNames(component, version string) []string {
	return []string{component + "-v" + version, component}
}

// FindProgram returns the absolute path of the first of ProgramNames that
// lookPath finds.
func FindProgram(lookPath func(string) (string, error), component, version string) (string, error) {
	var errs []error
	for _, name := range ProgramNames(component, version) {
		p, err := lookPath(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("neither %s nor %s is in the PATH: %w", component+"-v"+version, component, errors.Join(errs...))
}
