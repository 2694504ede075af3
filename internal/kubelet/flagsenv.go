package kubelet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// ParseFlagsEnv reads the flags of a kubeadm-flags.env: the "--name=value"
// words of its FlagsEnvVar line, in their order. A word without "=" is a
// flag without a value. ok is false when no line sets FlagsEnvVar.
//
// kubeadm writes the value Go-quoted as a whole; a value in plain double
// or single quotes, as a person may write it, is read too.
func ParseFlagsEnv(data []byte) (args []kubeadm.Arg, ok bool) {
	for line := range strings.Lines(string(data)) {
		value, found := strings.CutPrefix(strings.TrimSpace(line), FlagsEnvVar+"=")
		if !found {
			continue
		}
		ok = true
		args = nil
		for _, w := range strings.Fields(unquoteEnv(value)) {
			name, val, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			args = append(args, kubeadm.Arg{Name: name, Value: val})
		}
	}
	return args, ok
}

func unquoteEnv(v string) string {
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// FlagValue returns the value of the last flag called name among args.
func FlagValue(args []kubeadm.Arg, name string) (string, bool) {
	for _, a := range slices.Backward(args) {
		if a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}

// WithoutFlags returns the kubeadm-flags.env data with every flag called
// one of names left out of its FlagsEnvVar line (rewritten as kubeadm
// writes it), every other line kept as it is, and the flags removed. When
// nothing is removed, data comes back unchanged.
func WithoutFlags(data []byte, names ...string) ([]byte, []kubeadm.Arg) {
	var out bytes.Buffer
	var removed []kubeadm.Arg
	for line := range strings.Lines(string(data)) {
		args, ok := ParseFlagsEnv([]byte(line))
		if !ok {
			out.WriteString(line)
			continue
		}
		var kept []kubeadm.Arg
		for _, a := range args {
			if slices.Contains(names, a.Name) {
				removed = append(removed, a)
			} else {
				kept = append(kept, a)
			}
		}
		out.Write(FlagsEnv(kept))
	}
	if len(removed) == 0 {
		return data, nil
	}
	return out.Bytes(), removed
}

// ReadFlagsEnv reads kubeadm-flags.env in dir; (nil, nil) when there is
// none.
func ReadFlagsEnv(dir string) ([]byte, error) {
	data, err := boundedread.ReadFile(filepath.Join(dir, FlagsEnvFile), boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet's flags: %w", err)
	}
	return data, nil
}
