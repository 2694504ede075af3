package initphases

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// A dry run writes every file into its folder and shows some of them where
// upstream's does, in upstream's form ("[dryrun] Would write file PATH with
// content:" then the content as it is, so a program can cut a manifest out
// of the output): etcd's manifest in the etcd phase, the folder and the
// other manifests and the kubelet's files just before the wait for the
// control plane, the renewal schedule in its own phase. Certificates, keys
// and kubeconfig files are never shown.

// showDryRunFile shows the file f of the dry-run folder under the path a
// real run would write it to.
func showDryRunFile(d *Data, f string) error {
	b, err := boundedread.ReadFile(f, boundedread.MaxFile)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[dryrun] Would write file %q with content:\n", realPath(d, f))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, err = d.Out.Write(b)
	return err
}

// showDryRunManifest shows the static Pod manifest of component, when the
// dry run wrote one.
func showDryRunManifest(d *Data, component string) error {
	if !d.DryRun || d.DryRunDir == "" {
		return nil
	}
	f := staticpod.ManifestPath(d.ManifestDir, component)
	if _, err := os.Stat(f); err != nil {
		return nil
	}
	return showDryRunFile(d, f)
}

// ShowDryRunFolder names the dry-run folder and shows the static Pod
// manifests but etcd's (shown by its phase) and the kubelet's configuration
// and flags, as upstream's init does before waiting for the control plane.
// The folder line is upstream's; the files a phase left out are not shown.
func ShowDryRunFolder(d *Data) error {
	if !d.DryRun || d.DryRunDir == "" {
		return nil
	}
	fmt.Fprintf(d.Out, "[dryrun] Wrote certificates, kubeconfig files and control plane manifests to the %q directory\n", d.DryRunDir)
	fmt.Fprintln(d.Out, "[dryrun] Certificates, keys and kubeconfig files are not shown: they hold key material")
	fmt.Fprintf(d.Out, "[dryrun] Everything a real run would write is in %q\n", d.DryRunDir)
	entries, err := os.ReadDir(d.DryRunDir)
	if err != nil {
		return fmt.Errorf("listing the dry-run folder %s: %w", d.DryRunDir, err)
	}
	var manifests []string
	for _, e := range entries {
		f := filepath.Join(d.DryRunDir, e.Name())
		if !e.IsDir() && e.Name() != staticpod.Etcd+".yaml" && filepath.Dir(realPath(d, f)) == ManifestsDir {
			manifests = append(manifests, f)
		}
	}
	sort.Strings(manifests)
	for _, f := range append(manifests, filepath.Join(d.DryRunDir, kubelet.ConfigFile), filepath.Join(d.DryRunDir, kubelet.FlagsEnvFile)) {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		if err := showDryRunFile(d, f); err != nil {
			return err
		}
	}
	return nil
}

// showDryRunRenewal shows the renewal schedule's files the dry run wrote.
func showDryRunRenewal(d *Data) error {
	entries, err := os.ReadDir(d.DryRunDir)
	if err != nil {
		return fmt.Errorf("listing the dry-run folder %s: %w", d.DryRunDir, err)
	}
	for _, e := range entries {
		if _, ok := certrenewal.RealPath(e.Name()); ok && !e.IsDir() {
			if err := showDryRunFile(d, filepath.Join(d.DryRunDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// PrintDryRun lists what a dry run wrote, under the paths a real run would
// have used, and shows the content of manifests and kubelet files; join
// calls it at its end. Certificates, keys and kubeconfig files are listed
// but not shown: they hold private keys. etcd's manifest and the renewal
// schedule are left out: their phases showed them.
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
		if _, ok := certrenewal.RealPath(filepath.Base(f)); ok || target == filepath.Join(ManifestsDir, staticpod.Etcd+".yaml") {
			continue
		}
		switch filepath.Ext(f) {
		case ".crt", ".pub":
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q (a certificate or public key, not shown)\n", target)
			continue
		case ".yaml", ".env":
		default:
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q (not shown: it holds key material)\n", target)
			continue
		}
		if err := showDryRunFile(d, f); err != nil {
			return err
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
		if p, ok := certrenewal.RealPath(rel); ok {
			return p
		}
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
