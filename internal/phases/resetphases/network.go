package resetphases

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// cleanupNetwork removes what upstream reset leaves (kubernetes/kubeadm#689):
// the CNI configuration files and kube-proxy's packet-filter state, the
// chains whose names start with KUBE- and every rule that jumps to them,
// in the IPv4 and IPv6 tables, and the IPVS tables when ipvsadm is there.
// Rules and chains of other programs are kept. Idempotent.
func cleanupNetwork(ctx context.Context, d *Data) error {
	var errs []error
	fmt.Fprintf(d.Out, "[reset] Deleting the CNI configuration in %s\n", CNIConfigDir)
	// The files, not the folder: containerd watches the folder and would
	// not notice it coming back.
	var cni emptier
	if err := errors.Join(cni.emptyDir(CNIConfigDir, nil), cni.err()); err != nil {
		errs = append(errs, err)
	}
	fmt.Fprintln(d.Out, "[reset] Deleting kube-proxy's packet-filter rules (KUBE-* chains)")
	for _, family := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(family + "-save"); err != nil {
			continue
		}
		if err := flushKubeChains(ctx, d, family); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", family, err))
		}
	}
	if _, err := exec.LookPath("ipvsadm"); err == nil {
		if _, err := d.Run(ctx, nil, "ipvsadm", "--clear"); err != nil {
			errs = append(errs, fmt.Errorf("ipvsadm --clear: %w", err))
		}
	}
	return errors.Join(errs...)
}

// flushKubeChains rewrites each table without the KUBE- chains and the
// rules that use them, through iptables-save and iptables-restore.
func flushKubeChains(ctx context.Context, d *Data, family string) error {
	saved, err := d.Run(ctx, nil, family+"-save")
	if err != nil {
		return fmt.Errorf("%s-save: %w", family, err)
	}
	filtered, changed := withoutKubeChains(saved)
	if !changed {
		return nil
	}
	if _, err := d.Run(ctx, filtered, family+"-restore"); err != nil {
		return fmt.Errorf("%s-restore: %w", family, err)
	}
	return nil
}

// withoutKubeChains removes from iptables-save output the declarations of
// chains named KUBE-* and every rule in them or jumping to them; tables
// keep their other chains and rules. It reports whether anything went.
func withoutKubeChains(saved []byte) ([]byte, bool) {
	var out bytes.Buffer
	changed := false
	sc := bufio.NewScanner(bytes.NewReader(saved))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		drop := false
		switch {
		case strings.HasPrefix(line, ":KUBE-"):
			drop = true
		case strings.HasPrefix(line, "-A KUBE-"):
			drop = true
		case strings.HasPrefix(line, "-A ") && (strings.Contains(line, " -j KUBE-") || strings.Contains(line, " -g KUBE-")):
			drop = true
		}
		if drop {
			changed = true
			continue
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	return out.Bytes(), changed
}

// RunProgram runs a program with stdin, as Data.Run.
func RunProgram(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return out, nil
}
