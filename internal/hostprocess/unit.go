package hostprocess

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// Gate is the feature gate that turns the mode on.
const Gate = "HostProcessControlPlane"

// Enabled reports whether gates turn the mode on (it is off by default).
func Enabled(gates map[string]bool) bool { return gates[Gate] }

// The components, in the order they start (reverse to stop them: stopping
// etcd before the API server leaves the API server hanging).
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// Components returns the components in start order.
func Components() []string {
	return []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler}
}

// UnitDir is where the units are written: the folder of the
// administrator's units, which overrides a distribution's unit of the
// same name.
const UnitDir = "/etc/systemd/system"

// Marker is the first line of every unit kubeadm writes; reset removes
// only units that start with it.
const Marker = "# Written by kubeadm (HostProcessControlPlane): kubeadm reset removes it."

// UnitName is the systemd unit of component.
func UnitName(component string) string { return component + ".service" }

// UnitPath is the unit file of component under root ("" is /).
func UnitPath(root, component string) string {
	return filepath.Join(root, UnitDir, UnitName(component))
}

// after is what each unit is ordered after, besides the network.
var after = map[string]string{
	KubeAPIServer:         UnitName(Etcd),
	KubeControllerManager: UnitName(KubeAPIServer),
	KubeScheduler:         UnitName(KubeAPIServer),
}

// Unit renders the unit of component from its static Pod: the first
// container's command and arguments, the program (the command's first
// word, a bare name in kubeadm's manifests) replaced by binary, an
// absolute path, and the container's environment. A volume that mounts a
// host path at another path in the container is refused, since a host
// process sees host paths only; the rest of the Pod (image, resources,
// probes, security context) has no meaning for a unit.
func Unit(component string, pod *corev1.Pod, binary string) ([]byte, error) {
	if pod == nil || len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the %s Pod has no container", component)
	}
	if !path.IsAbs(binary) {
		return nil, fmt.Errorf("the %s program %q is not an absolute path", component, binary)
	}
	c := pod.Spec.Containers[0]
	if err := sameMounts(pod, &c); err != nil {
		return nil, fmt.Errorf("%s as a host process: %w", component, err)
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("the %s container has no command", component)
	}
	argv[0] = binary
	var b bytes.Buffer
	fmt.Fprintln(&b, Marker)
	fmt.Fprintln(&b, "[Unit]")
	fmt.Fprintf(&b, "Description=%s, a control-plane component of Kubernetes run by its init system\n", component)
	fmt.Fprintln(&b, "Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/")
	fmt.Fprintln(&b, "Wants=network-online.target")
	fmt.Fprintf(&b, "After=%s\n", strings.TrimSpace("network-online.target "+after[component]))
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "[Service]")
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, fmt.Errorf("%s as a host process: the environment variable %s takes its value from the cluster (valueFrom)", component, e.Name)
		}
		fmt.Fprintf(&b, "Environment=%s\n", quote(e.Name+"="+e.Value, false))
	}
	b.WriteString("ExecStart=")
	for i, a := range argv {
		if i > 0 {
			b.WriteString(" \\\n  ")
		}
		b.WriteString(quote(a, true))
	}
	b.WriteString("\n")
	fmt.Fprintln(&b, "Restart=always")
	fmt.Fprintln(&b, "RestartSec=5")
	fmt.Fprintln(&b, "LimitNOFILE=1048576")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "[Install]")
	fmt.Fprintln(&b, "WantedBy=multi-user.target")
	return b.Bytes(), nil
}

// sameMounts refuses a hostPath volume mounted at another path.
func sameMounts(pod *corev1.Pod, c *corev1.Container) error {
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range c.VolumeMounts {
		hp, ok := hostPaths[m.Name]
		if !ok {
			return fmt.Errorf("volume %q is not a host path", m.Name)
		}
		if path.Clean(hp) != path.Clean(m.MountPath) || m.SubPath != "" {
			return fmt.Errorf("volume %q mounts the host path %s at %s; a host process sees the host's paths only, so hostPath and mountPath must be the same", m.Name, hp, m.MountPath)
		}
	}
	return nil
}

// quote writes s as one word of a unit file: as it is when it holds
// nothing systemd reads specially, else in double quotes with C escapes.
// "%" (specifiers) is doubled everywhere, "$" (variable expansion) in
// ExecStart.
func quote(s string, exec bool) string {
	special := "\"'\\ \t\n;%"
	if exec {
		special += "$"
	}
	if s != "" && !strings.ContainsAny(s, special) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '%':
			b.WriteString("%%")
		case r == '$' && exec:
			b.WriteString("$$")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ReadUnit reads a unit kubeadm wrote (see Marker) and returns it as the
// Pod it came from, as far as a unit keeps it: one container named
// component with the unit's command line as Command (the program's
// absolute path first) and its environment. ok is false for a unit
// without the marker, which is not kubeadm's; a missing file is an error
// matching fs.ErrNotExist.
func ReadUnit(filePath, component string) (pod *corev1.Pod, ok bool, err error) {
	data, err := boundedread.ReadFile(filePath, boundedread.MaxFile)
	if err != nil {
		return nil, false, err
	}
	return ParseUnit(filePath, data, component)
}

// ParseUnit is ReadUnit of a unit's content; filePath only names it in
// errors.
func ParseUnit(filePath string, data []byte, component string) (pod *corev1.Pod, ok bool, err error) {
	if !Ours(data) {
		return nil, false, nil
	}
	c := corev1.Container{Name: component}
	for _, line := range logicalLines(data) {
		key, value, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		switch strings.TrimSpace(key) {
		case "ExecStart":
			words, err := split(value, true)
			if err != nil {
				return nil, true, fmt.Errorf("%s: ExecStart: %w", filePath, err)
			}
			c.Command = words
		case "Environment":
			words, err := split(value, false)
			if err != nil {
				return nil, true, fmt.Errorf("%s: Environment: %w", filePath, err)
			}
			for _, w := range words {
				name, v, _ := strings.Cut(w, "=")
				c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: v})
			}
		}
	}
	if len(c.Command) == 0 {
		return nil, true, fmt.Errorf("%s has no ExecStart", filePath)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: component},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}, true, nil
}

// Ours reports whether a unit file's content is one kubeadm wrote.
func Ours(data []byte) bool {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return string(first) == Marker
}

// logicalLines joins the lines of a unit file continued by a trailing
// backslash and drops comments and blank lines.
func logicalLines(data []byte) []string {
	var out []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), int(boundedread.MaxFile))
	for sc.Scan() {
		line := sc.Text()
		if cur.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
				continue
			}
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// split undoes quote on a line of words.
func split(s string, exec bool) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quoted && r == '\\' && i+1 < len(rs):
			i++
			switch rs[i] {
			case 'n':
				w.WriteByte('\n')
			case 't':
				w.WriteByte('\t')
			default:
				w.WriteRune(rs[i])
			}
		case r == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '%' && i+1 < len(rs) && rs[i+1] == '%':
			w.WriteByte('%')
			i++
			inWord = true
		case exec && r == '$' && i+1 < len(rs) && rs[i+1] == '$':
			w.WriteByte('$')
			i++
			inWord = true
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, errors.New("unterminated quote")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
