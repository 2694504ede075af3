package initphases

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// PrintDryRun lists what a dry run wrote, under the paths a real run would
// have used, and shows the content of manifests and kubelet files.
// Certificates, keys and kubeconfig files are listed but not shown: they
// hold private keys.
func PrintDryRun(d *Data) error {
	if !d.DryRun || d.DryRunDir == "" {
		return nil
	}
	var files []string
	err := filepath.WalkDir(d.DryRunDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the dry-run folder %s: %w", d.DryRunDir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		target := realPath(d, f)
		switch filepath.Ext(f) {
		case ".crt", ".pub":
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q (a certificate or public key, not shown)\n", target)
			continue
		case ".yaml", ".env":
		default:
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q (not shown: it holds key material)\n", target)
			continue
		}
		b, err := boundedread.ReadFile(f, boundedread.MaxFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(d.Out, "[dryrun] Would write file %q with content:\n", target)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		for sc.Scan() {
			fmt.Fprintf(d.Out, "\t%s\n", sc.Text())
		}
	}
	return nil
}

// realPath is where the file f of the dry-run folder goes on a real run.
// The folder is flat, as upstream's: the kubelet's files, manifests
// (.yaml) and kubeconfig files (.conf) at its top, everything else is the
// certificate folder's.
func realPath(d *Data, f string) string {
	rel, err := filepath.Rel(d.DryRunDir, f)
	if err != nil || strings.HasPrefix(rel, "..") {
		return f
	}
	if filepath.Dir(rel) == "." {
		switch {
		case rel == kubelet.ConfigFile, rel == kubelet.InstanceConfigFile, rel == kubelet.FlagsEnvFile:
			return filepath.Join(KubeletDir, rel)
		case filepath.Ext(rel) == ".yaml":
			return filepath.Join(ManifestsDir, rel)
		case filepath.Ext(rel) == ".conf":
			return filepath.Join(KubernetesDir, rel)
		}
	}
	return filepath.Join(d.Cfg.CertificatesDir, rel)
}
