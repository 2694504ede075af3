package initphases

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// PrintDryRun lists what a dry run wrote, under the paths a real run would
// have used, and shows the content of manifests and kubelet files.
// Certificates, keys and kubeconfig files are listed but not shown: they
// hold private keys.
func PrintDryRun(d *Data) error {
	if !d.DryRun || d.DryRunDir == "" {
		return nil
	}
	real := map[string]string{
		d.CertDir:       d.Cfg.CertificatesDir,
		d.ManifestDir:   ManifestsDir,
		d.KubeletDir:    KubeletDir,
		d.KubeconfigDir: KubernetesDir,
	}
	// Longest prefixes first, so pki/ maps before the folder holding it.
	prefixes := make([]string, 0, len(real))
	for p := range real {
		prefixes = append(prefixes, p)
	}
	sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) > len(prefixes[j]) })
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
		target := f
		for _, p := range prefixes {
			if rel, err := filepath.Rel(p, f); err == nil && !strings.HasPrefix(rel, "..") {
				target = filepath.Join(real[p], rel)
				break
			}
		}
		if !showable(f) {
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q (not shown: it holds key material)\n", target)
			continue
		}
		b, err := os.ReadFile(f)
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

func showable(path string) bool {
	switch filepath.Ext(path) {
	case ".yaml", ".env":
		return true
	}
	return false
}
