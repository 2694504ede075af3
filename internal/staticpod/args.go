package staticpod

import (
	"maps"
	"slices"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// args are the command-line flags of a component: kubeadm's own, by name,
// and the user's extra arguments, in order and possibly repeated.
type args struct {
	defaults map[string]string
	extra    []kubeadm.Arg
}

// command returns binary followed by the flags as "--name=value": first
// kubeadm's own sorted by name, leaving out every name the extra arguments
// use, then the extra arguments in their order, repeats included.
func (a args) command(binary string) []string {
	overridden := make(map[string]bool, len(a.extra))
	for _, e := range a.extra {
		overridden[e.Name] = true
	}
	cmd := make([]string, 0, 1+len(a.defaults)+len(a.extra))
	cmd = append(cmd, binary)
	for _, name := range slices.Sorted(maps.Keys(a.defaults)) {
		if !overridden[name] {
			cmd = append(cmd, "--"+name+"="+a.defaults[name])
		}
	}
	for _, e := range a.extra {
		cmd = append(cmd, "--"+e.Name+"="+e.Value)
	}
	return cmd
}

// value is the value the component sees for the flag name: the last extra
// argument of that name, else kubeadm's own. ok is false when neither sets it.
func (a args) value(name string) (v string, ok bool) {
	for i := len(a.extra) - 1; i >= 0; i-- {
		if a.extra[i].Name == name {
			return a.extra[i].Value, true
		}
	}
	v, ok = a.defaults[name]
	return v, ok
}

// extraValues returns the values of the extra arguments named name, in order.
func (a args) extraValues(name string) []string {
	var vs []string
	for _, e := range a.extra {
		if e.Name == name {
			vs = append(vs, e.Value)
		}
	}
	return vs
}
