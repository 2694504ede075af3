//go:build compat

package compat

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The node-on-disk comparison: both binaries run the offline init phases in
// their own --rootfs folder on the same configuration, and every file they
// write is compared: certificates by their properties (keys and serials are
// random by nature), kubeconfigs by identity, server and CA subject,
// manifests as parsed objects with command flags compared as sets, kubelet
// files as parsed objects, and every file's mode.

var offlinePhases = [][]string{
	{"init", "phase", "certs", "all"},
	{"init", "phase", "kubeconfig", "all"},
	{"init", "phase", "etcd", "local"},
	{"init", "phase", "control-plane", "all"},
	{"init", "phase", "kubelet-start"},
}

// newRoot prepares a --rootfs folder holding the configuration, its
// kubernetesVersion olderVersion replaced by version, and a copy of the
// host's routing tables, which both binaries read to find the default
// address (a chroot has no /proc).
func newRoot(t *testing.T, config, version string) string {
	t.Helper()
	root := t.TempDir()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	b = olderVersionLine.ReplaceAll(b, []byte("${1}"+version))
	if err := os.WriteFile(filepath.Join(root, "config.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The patches folder some test configurations name.
	for _, dir := range []string{"proc/net", "etc/kubeadm/patches"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"route", "ipv6_route"} {
		if b, err := os.ReadFile("/proc/net/" + f); err == nil {
			_ = os.WriteFile(filepath.Join(root, "proc", "net", f), b, 0o644)
		}
	}
	// The account files the RootlessControlPlane gate adds users to.
	for _, f := range []string{"passwd", "group", "login.defs"} {
		if b, err := os.ReadFile("/etc/" + f); err == nil {
			_ = os.WriteFile(filepath.Join(root, "etc", f), b, 0o644)
		}
	}
	return root
}

func hasInitKinds(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "kind: InitConfiguration") || strings.Contains(s, "kind: ClusterConfiguration")
}

// olderVersionLine is a kubernetesVersion line naming olderVersion.
var olderVersionLine = regexp.MustCompile(`(?m)^(\s*kubernetesVersion:\s*)` + regexp.QuoteMeta(olderVersion) + `\b`)

// TestNodeFiles compares the files of every configuration for a control
// plane of each version this kubeadm deploys: the configuration as it is
// (olderVersion) and with k8sVersion in its place.
func TestNodeFiles(t *testing.T) {
	requireSetup(t)
	for _, f := range configFiles(t, "valid-") {
		if !hasInitKinds(f) {
			continue
		}
		for _, version := range []string{olderVersion, k8sVersion} {
			testNodeFiles(t, f, version)
		}
	}
}

func testNodeFiles(t *testing.T, f, version string) {
	base := filepath.Base(f) + "@" + version
	t.Run(base, func(t *testing.T) {
		rootOurs, rootUp := newRoot(t, f, version), newRoot(t, f, version)
		var d diffs
		for _, p := range offlinePhases {
			args := append(append([]string{}, p...), "--config", "/config.yaml")
			ours := invoke(t, oursBin, append(args, "--rootfs", rootOurs)...)
			up := invoke(t, upstreamBin, append(args, "--rootfs", rootUp)...)
			if ours.code != up.code {
				d.add("%s: exit code ours %d upstream %d\n  ours: %s\n  upstream: %s", strings.Join(p, " "), ours.code, up.code,
					strings.TrimSpace(ours.stderr), strings.TrimSpace(up.stderr))
			}
			if up.code != 0 {
				break
			}
		}
		compareTrees(&d, rootOurs, rootUp)
		if len(d.lines) > 0 {
			t.Errorf("%s: %d difference(s) in the files written:\n  - %s", base, len(d.lines), strings.Join(d.lines, "\n  - "))
		}
	})
}

// compareTrees compares the files each binary wrote under etc/kubernetes
// and var/lib/kubelet of its root.
func compareTrees(d *diffs, ours, up string) {
	of, uf := listFiles(ours), listFiles(up)
	names := map[string]bool{}
	for n := range of {
		names[n] = true
	}
	for n := range uf {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		om, oin := of[n]
		um, uin := uf[n]
		switch {
		case !oin:
			d.add("%s: ours <missing> upstream present", n)
			continue
		case !uin:
			d.add("%s: ours present upstream <missing>", n)
			continue
		}
		if om != um {
			d.add("%s: mode and owner ours %v upstream %v", n, om, um)
		}
		ob, _ := os.ReadFile(filepath.Join(ours, n))
		ub, _ := os.ReadFile(filepath.Join(up, n))
		compareFile(d, n, ob, ub)
	}
}

// fileMeta is a file's mode and owner.
type fileMeta struct {
	mode     fs.FileMode
	uid, gid uint32
}

func (m fileMeta) String() string { return fmt.Sprintf("%v %d:%d", m.mode, m.uid, m.gid) }

func metaOf(info fs.FileInfo) fileMeta {
	m := fileMeta{mode: info.Mode().Perm()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		m.uid, m.gid = st.Uid, st.Gid
	}
	return m
}

func listFiles(root string) map[string]fileMeta {
	out := map[string]fileMeta{}
	for _, top := range []string{"etc/kubernetes", "var/lib/kubelet", "var/lib/etcd", "etc/passwd", "etc/group"} {
		_ = filepath.WalkDir(filepath.Join(root, top), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			info, ierr := e.Info()
			if ierr != nil {
				return nil
			}
			if e.IsDir() {
				out[rel+"/"] = metaOf(info)
				return nil
			}
			out[rel] = metaOf(info)
			return nil
		})
	}
	return out
}

func compareFile(d *diffs, name string, ours, up []byte) {
	switch {
	case strings.HasSuffix(name, "/"):
	case strings.HasSuffix(name, ".crt"):
		diffValue(d, name, certFacts(ours), certFacts(up))
	case strings.HasSuffix(name, ".key"), strings.HasSuffix(name, ".pub"):
		diffValue(d, name, keyFacts(ours), keyFacts(up))
	case strings.HasSuffix(name, ".conf"):
		diffValue(d, name, kubeconfigFacts(ours), kubeconfigFacts(up))
	case strings.Contains(name, "manifests/"):
		diffValue(d, name, manifestFacts(ours), manifestFacts(up))
	case strings.HasSuffix(name, ".env"):
		diffValue(d, name, envFacts(ours), envFacts(up))
	case strings.HasSuffix(name, ".yaml"):
		var o, u any
		_ = yaml.Unmarshal(ours, &o)
		_ = yaml.Unmarshal(up, &u)
		diffValue(d, name, o, u)
	default:
		if string(ours) != string(up) {
			d.add("%s: content differs", name)
		}
	}
}

// certFacts are the properties of a certificate that do not depend on
// randomness: subject, issuer, SANs, usages, CA flag, lifetime, key type.
func certFacts(b []byte) any {
	block, _ := pem.Decode(b)
	if block == nil {
		return "<not PEM>"
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "<not a certificate>"
	}
	var ips []any
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].(string) < ips[j].(string) })
	dns := append([]string(nil), c.DNSNames...)
	sort.Strings(dns)
	var ext []any
	for _, u := range c.ExtKeyUsage {
		ext = append(ext, float64(u))
	}
	var dnsAny []any
	for _, n := range dns {
		dnsAny = append(dnsAny, n)
	}
	return map[string]any{
		"subject":     c.Subject.String(),
		"issuer":      c.Issuer.String(),
		"dnsNames":    dnsAny,
		"ips":         ips,
		"keyUsage":    float64(c.KeyUsage),
		"extKeyUsage": ext,
		"isCA":        c.IsCA,
		// Rounded down to 5 minutes: a kubeconfig's client certificate
		// starts when its CA did, so its lifetime also holds the time
		// between the certs and kubeconfig phases, which under load
		// passes a minute. The 5-minute backdate still shows.
		"lifetime": floorDuration(c.NotAfter.Sub(c.NotBefore), 5*time.Minute).String(),
		"key":      publicKeyType(c.PublicKey),
	}
}

// floorDuration rounds d down to a multiple of m. Truncate rounds toward
// zero, which for a negative validity would round a lifetime a second
// longer than upstream's (its phases ran a second apart) up into the next
// step: -23h54m59s must read as -23h55m, not -23h50m.
func floorDuration(d, m time.Duration) time.Duration {
	t := d.Truncate(m)
	if t > d {
		t -= m
	}
	return t
}

func publicKeyType(k any) string {
	switch p := k.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", p.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA-" + p.Curve.Params().Name
	}
	return fmt.Sprintf("%T", k)
}

func keyFacts(b []byte) any {
	block, _ := pem.Decode(b)
	if block == nil {
		return "<not PEM>"
	}
	facts := map[string]any{"pemType": block.Type}
	switch block.Type {
	case "RSA PRIVATE KEY":
		if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			facts["key"] = publicKeyType(&k.PublicKey)
		}
	case "EC PRIVATE KEY":
		if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			facts["key"] = publicKeyType(&k.PublicKey)
		}
	case "PUBLIC KEY":
		if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
			facts["key"] = publicKeyType(k)
		}
	}
	return facts
}

// kubeconfigFacts keeps a kubeconfig's structure but replaces embedded
// certificates by their facts and drops key data.
func kubeconfigFacts(b []byte) any {
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "<not YAML>"
	}
	walkReplace(m)
	return m
}

func walkReplace(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "certificate-authority-data", "client-certificate-data":
				s, _ := val.(string)
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					x[k] = "<not base64>"
				} else {
					x[k] = certFacts(raw)
				}
			case "client-key-data":
				s, _ := val.(string)
				raw, _ := base64.StdEncoding.DecodeString(s)
				x[k] = keyFacts(raw)
			default:
				walkReplace(val)
			}
		}
	case []any:
		for _, e := range x {
			walkReplace(e)
		}
	}
}

// manifestFacts parses a static pod manifest and turns each container's
// command into a set (a map from flag name to its values).
func manifestFacts(b []byte) any {
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "<not YAML>"
	}
	spec, _ := m["spec"].(map[string]any)
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		cm, _ := c.(map[string]any)
		cmd, _ := cm["command"].([]any)
		set := map[string]any{}
		for i, a := range cmd {
			s, _ := a.(string)
			if i == 0 {
				set["<binary>"] = s
				continue
			}
			name, val, _ := strings.Cut(strings.TrimLeft(s, "-"), "=")
			prev, _ := set[name].([]any)
			set[name] = append(prev, val)
		}
		cm["command"] = set
	}
	return m
}

// envFacts turns kubeadm-flags.env into its flags as a set.
func envFacts(b []byte) any {
	line := strings.TrimSpace(string(b))
	_, val, _ := strings.Cut(line, "=")
	val = strings.Trim(val, `"`)
	set := map[string]any{}
	for _, f := range strings.Fields(val) {
		name, v, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		set[name] = v
	}
	return set
}

func TestFloorDuration(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{24*time.Hour + 5*time.Minute + 3*time.Second, 24*time.Hour + 5*time.Minute},
		{-24*time.Hour + 5*time.Minute, -23*time.Hour - 55*time.Minute},
		{-24*time.Hour + 5*time.Minute + time.Second, -23*time.Hour - 55*time.Minute},
	} {
		if got := floorDuration(c.d, 5*time.Minute); got != c.want {
			t.Errorf("floorDuration(%v) = %v, want %v", c.d, got, c.want)
		}
	}
}
