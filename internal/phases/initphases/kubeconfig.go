package initphases

import (
	"context"
	"crypto"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// KubeconfigDirFlag is the flag of the "init phase kubeconfig ..." commands
// that chooses the kubeconfig folder. "kubeadm init" itself has no such flag.
const KubeconfigDirFlag = "kubeconfig-dir"

// kubeconfigFlags returns the flags of "kubeadm init" that the kubeconfig
// phase commands accept, with node-name when the phase writes kubelet.conf.
func kubeconfigFlags(withNodeName bool) []string {
	flags := []string{"config", "cert-dir", "kubernetes-version", "apiserver-advertise-address",
		"apiserver-bind-port", "control-plane-endpoint", "dry-run"}
	if withNodeName {
		flags = append(flags, "node-name")
	}
	return flags
}

// KubeconfigPhase writes the kubeconfig files of the control-plane node:
// admin.conf, super-admin.conf, kubelet.conf, controller-manager.conf and
// scheduler.conf. It is idempotent: an existing file that trusts the
// cluster CA is kept unchanged, a missing one is created (see
// kubeconfig.Files.Ensure). With an external CA (ca.crt without ca.key)
// every file must already exist.
//
// When the group runs as a whole, the keys of the files missing when the
// run starts are generated in parallel from then on (within init, while
// preflight and the certificates run); each sub-phase then takes its key.
// The keys live only as long as the phase tree this call returns, i.e. one
// command.
func KubeconfigPhase() workflow.Phase[*Data] { return kubeconfigPhase(nil) }

// kubeconfigPhase is KubeconfigPhase, arming hs (when not nil) to write
// kubelet.conf ahead of its turn.
func kubeconfigPhase(hs *kubeletHeadStart) workflow.Phase[*Data] {
	keys := &preparedKeys{}
	local := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	dirFlag := local.String(KubeconfigDirFlag, KubernetesDir, "Folder the kubeconfig files are written to.")
	dir := func(d *Data) string {
		// A dry run always writes into its own folder.
		if f := local.Lookup(KubeconfigDirFlag); f.Changed && !d.DryRun {
			return *dirFlag
		}
		return d.KubeconfigDir
	}

	write := func(d *Data, file string, w io.Writer) error {
		key, err := keys.take(d, file)
		if err != nil {
			return err
		}
		return ensureKubeconfig(d, dir(d), file, key, w)
	}
	if hs != nil {
		hs.writeKubeconfig = func(d *Data, w io.Writer) error { return write(d, kubeconfig.KubeletFile, w) }
	}
	leaf := func(file, name, short, long string, withNodeName bool) workflow.Phase[*Data] {
		return workflow.Phase[*Data]{
			Name:         name,
			Short:        short,
			Long:         long,
			InheritFlags: kubeconfigFlags(withNodeName),
			LocalFlags:   local,
			Run: func(_ context.Context, d *Data) error {
				if file == kubeconfig.KubeletFile {
					if ok, err := hs.kubeconfigDone(d, d.Out); ok {
						return err
					}
				}
				return write(d, file, d.Out)
			},
		}
	}

	return workflow.Phase[*Data]{
		Name:  "kubeconfig",
		Short: "Write the kubeconfig files of the control plane and of the administrator",
		Long: `Write the kubeconfig files the control-plane components, the kubelet and the
cluster administrators use to reach the API server. Each holds the cluster CA
and a client certificate the CA signs. An existing file is kept when it trusts
the cluster CA.`,
		Prepare: func(ctx context.Context, d *Data) {
			keys.start(ctx, d, dir(d), hs.plan(d))
		},
		Run: func(_ context.Context, d *Data) error {
			return prepareKubeconfigs(d, dir(d))
		},
		Phases: []workflow.Phase[*Data]{
			{
				Name:           "all",
				Short:          "Write every kubeconfig file",
				InheritFlags:   kubeconfigFlags(true),
				LocalFlags:     local,
				RunAllSiblings: true,
			},
			leaf(kubeconfig.AdminFile, "admin",
				"Write the kubeconfig file of the cluster administrator and of kubeadm itself",
				`Write admin.conf, the kubeconfig file of the cluster administrator and of
kubeadm, for the user "kubernetes-admin" in the group "kubeadm:cluster-admins".`, false),
			leaf(kubeconfig.SuperAdminFile, "super-admin",
				"Write the kubeconfig file of the super-administrator",
				`Write super-admin.conf, the kubeconfig file of "kubernetes-super-admin" in the
group "system:masters", which bypasses authorization. Keep it offline.`, false),
			leaf(kubeconfig.KubeletFile, "kubelet",
				"Write the kubeconfig file the kubelet uses to bootstrap the cluster",
				`Write kubelet.conf, the kubeconfig file of this node's kubelet
("system:node:<node name>" in the group "system:nodes").

Use it only to bring up the cluster: once the control plane runs, the kubelet
gets its credentials through certificate signing requests.`, true),
			leaf(kubeconfig.ControllerManagerFile, "controller-manager",
				"Write the kubeconfig file of the controller manager",
				`Write controller-manager.conf, the kubeconfig file of the controller manager
("system:kube-controller-manager"), which talks to this node's API server.`, false),
			leaf(kubeconfig.SchedulerFile, "scheduler",
				"Write the kubeconfig file of the scheduler",
				`Write scheduler.conf, the kubeconfig file of the scheduler
("system:kube-scheduler"), which talks to this node's API server.`, false),
		},
	}
}

// kubeconfigFiles returns the file manager of dir for the cluster CA in
// d.CertDir.
func kubeconfigFiles(d *Data, dir string) (kubeconfig.Files, error) {
	ca, err := kubeconfig.LoadCA(d.CertDir)
	if err != nil {
		return kubeconfig.Files{}, err
	}
	validity := v1beta4.DefaultCertificateValidityPeriod
	if p := d.Cfg.CertificateValidityPeriod; p != nil {
		validity = p.Duration
	}
	return kubeconfig.Files{Dir: dir, Issuer: kubeconfig.Issuer{
		CA:        ca,
		Validity:  validity,
		Algorithm: d.Cfg.KeyAlgorithm(),
		Now:       d.Now,
	}}, nil
}

// CheckExternalCAKubeconfigs checks, when the cluster CA in d.CertDir has
// no key (an external CA), that every kubeconfig file is present in dir and
// trusts the CA: kubeadm cannot create them then. Upstream kubeadm makes
// this check while preparing any init phase, so the init command may call
// it from its data builder. It changes nothing and returns nil when the CA
// has its key or cannot be read (the phases report that).
func CheckExternalCAKubeconfigs(d *Data, dir string) error {
	// A CA with its key is the usual case: tell it by the key's presence
	// rather than by parsing the key, which every init command would pay.
	if external, err := usesExternalCA(d.CertDir); err != nil || !external {
		return nil
	}
	files, err := kubeconfigFiles(d, dir)
	if err != nil || !files.Issuer.CA.External() {
		return nil
	}
	specs, err := kubeconfig.ControlPlaneSpecs(d.Cfg, nil)
	if err != nil {
		return err
	}
	// The warnings come again from the sub-phases, which report them.
	_, err = files.CheckProvided(specs)
	return err
}

// prepareKubeconfigs runs before the sub-phases of a whole-group run. With
// an external CA it checks that every file is provided. Problems loading
// the CA are left to the sub-phases, which report them under their names.
func prepareKubeconfigs(d *Data, dir string) error {
	if err := CheckExternalCAKubeconfigs(d, dir); err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[kubeconfig] Using kubeconfig folder %q\n", dir)
	return nil
}

// ensureKubeconfig makes sure one file exists and trusts the cluster CA,
// creating it with key (or a new key when nil), and tells w what it did.
func ensureKubeconfig(d *Data, dir, file string, key crypto.Signer, w io.Writer) error {
	spec, err := kubeconfig.ControlPlaneSpec(file, d.Cfg, klog.Warningf)
	if err != nil {
		return err
	}
	return ensureKubeconfigSpec(d, dir, spec, key, w)
}

// ensureKubeconfigSpec is ensureKubeconfig for any spec.
func ensureKubeconfigSpec(d *Data, dir string, spec kubeconfig.Spec, key crypto.Signer, w io.Writer) error {
	file := spec.FileName
	files, err := kubeconfigFiles(d, dir)
	if err != nil {
		return fmt.Errorf("cannot create kubeconfig files: %w", err)
	}
	res, err := files.Ensure(spec, key)
	for _, w := range res.Warnings {
		klog.Warning(w)
	}
	if err != nil {
		return err
	}
	switch res.Action {
	case kubeconfig.Created:
		fmt.Fprintf(w, "[kubeconfig] Writing %q kubeconfig file\n", file)
	case kubeconfig.Kept:
		fmt.Fprintf(w, "[kubeconfig] Using existing kubeconfig file: %q\n", res.Path)
	case kubeconfig.KeptExternal:
		fmt.Fprintf(w, "[kubeconfig] External CA mode: Using user provided %s\n", file)
	}
	return nil
}

// preparedKeys makes, ahead of need, the client keys of the kubeconfig
// files of one Data that are missing, until a sub-phase takes its own.
type preparedKeys struct{ aheadKeys }

// start begins making a key of the configured algorithm for each
// control-plane kubeconfig file missing from dir. It needs neither the CA
// nor anything else on disk: a file that turns out not to need its key
// leaves it unused.
// With hold (a kubelet head start) only the first key is made at once.
func (p *preparedKeys) start(ctx context.Context, d *Data, dir string, hold *pki.KeyHold) {
	specs, err := kubeconfig.ControlPlaneSpecs(d.Cfg, nil)
	if err != nil {
		return // the sub-phases report it
	}
	var names []string
	for _, s := range (kubeconfig.Files{Dir: dir}).Missing(specs) {
		names = append(names, s.FileName)
	}
	p.aheadKeys.start(ctx, d, nil, names, hold)
}

// take returns the key made for file, waiting for it if need be, or nil
// when none was made for it (or it was taken already).
func (p *preparedKeys) take(d *Data, file string) (crypto.Signer, error) {
	key, _, err := p.poolFor(d).Take(file)
	if err != nil {
		return nil, fmt.Errorf("generating the client key of %s: %w", file, err)
	}
	return key, nil
}
