package initphases

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/addons/clusterdns"
	"github.com/kubeadm-go/kubeadm/internal/addons/coredns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubedns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubeproxy"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/patches"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// PrintManifestFlag makes the addon sub-phases print their objects instead
// of installing them.
const PrintManifestFlag = "print-manifest"

// Flags of "kubeadm init" each addon phase command accepts, as upstream's.
func addonAllFlags() []string {
	return []string{
		"apiserver-advertise-address", "apiserver-bind-port", "config", "control-plane-endpoint", "dry-run",
		"feature-gates", "image-repository", "kubeconfig", "kubernetes-version", "pod-network-cidr",
		"service-cidr", "service-dns-domain",
	}
}

func addonCoreDNSFlags() []string {
	return []string{
		"config", "dry-run", "feature-gates", "image-repository", "kubeconfig", "kubernetes-version",
		"service-cidr", "service-dns-domain",
	}
}

func addonKubeProxyFlags() []string {
	return []string{
		"apiserver-advertise-address", "apiserver-bind-port", "config", "control-plane-endpoint", "dry-run",
		"image-repository", "kubeconfig", "kubernetes-version", "pod-network-cidr",
	}
}

// AddonPhase installs the essential addons, CoreDNS and kube-proxy,
// through the API server. Each sub-phase is passed over when the
// configuration disables its addon (dns.disabled, proxy.disabled), unless
// it only prints its manifests.
func AddonPhase() workflow.Phase[*Data] {
	local := pflag.NewFlagSet("addon", pflag.ContinueOnError)
	printManifest := local.Bool(PrintManifestFlag, false, "Print the addon's objects as YAML instead of installing them.")
	return workflow.Phase[*Data]{
		Name:  "addon",
		Short: "Install the essential addons: CoreDNS and kube-proxy",
		Long:  "Install the addons every cluster needs to pass conformance tests, CoreDNS and kube-proxy, through the API server.",
		Phases: []workflow.Phase[*Data]{
			{
				Name:           "all",
				Short:          "Install every essential addon",
				InheritFlags:   addonAllFlags(),
				RunAllSiblings: true,
			},
			{
				Name:  "coredns",
				Short: "Install the CoreDNS addon",
				Long: `Install CoreDNS through the API server: its ServiceAccount, the
"system:coredns" ClusterRole and ClusterRoleBinding, the "coredns" ConfigMap
and Deployment, and the "kube-dns" Service. Existing objects are replaced,
except that a Corefile someone changed and the Deployment's replica count
are kept. The DNS Pods are only scheduled once a Pod network add-on is
installed.

With the feature gate CoreDNS=false, kube-dns is installed instead: the
"kube-dns" ServiceAccount, ConfigMap (when missing), Deployment and Service.
When the other DNS addon runs, the cluster is switched without a DNS outage:
the new Pods are started and awaited, the "kube-dns" Service (and its cluster
IP) moves to them, then the old Deployment is deleted.`,
				InheritFlags: addonCoreDNSFlags(),
				LocalFlags:   local,
				Run: func(ctx context.Context, d *Data) error {
					return runCoreDNSAddon(ctx, d, *printManifest)
				},
			},
			{
				Name:  "kube-proxy",
				Short: "Install the kube-proxy addon",
				Long: `Install kube-proxy through the API server: its ServiceAccount, the
"kubeadm:node-proxier" ClusterRoleBinding, a Role and RoleBinding that let
joining nodes read its ConfigMap, the "kube-proxy" ConfigMap (the
KubeProxyConfiguration and an in-cluster kubeconfig) and DaemonSet. Existing
objects are replaced.`,
				InheritFlags: addonKubeProxyFlags(),
				LocalFlags:   local,
				Run: func(ctx context.Context, d *Data) error {
					return runKubeProxyAddon(ctx, d, *printManifest)
				},
			},
		},
	}
}

// runCoreDNSAddon prints or applies the cluster's DNS addon: CoreDNS, or
// kube-dns when the CoreDNS feature gate is off (as kubeadm v1.11–v1.20
// did in this phase). When the other addon runs, the cluster is switched
// to the chosen one behind the same Service (clusterdns.Install).
// Idempotent.
func runCoreDNSAddon(ctx context.Context, d *Data, printOnly bool) error {
	target, others, manifests, err := dnsAddons(d)
	if err != nil {
		return err
	}
	if printOnly {
		return printAddon(d, manifests)
	}
	if d.Cfg.DNS.Disabled {
		klog.V(1).Infof("[addons] dns.disabled is set; the %s addon is not installed", target.Name)
		return nil
	}
	// Under --dry-run the client only prints what it would send.
	cs, err := d.Client(ctx)
	if err != nil {
		return err
	}
	opts := clusterdns.Options{Out: d.Out, DryRun: d.DryRun}
	if err := clusterdns.Install(ctx, cs, target, others, opts); err != nil {
		return fmt.Errorf("installing the %s addon: %w", target.Name, err)
	}
	fmt.Fprintf(d.Out, "[addons] Applied essential addon: %s\n", target.Name)
	return nil
}

// dnsAddons builds the DNS addon the configuration chooses, the other one
// (to be replaced when it runs), and the chosen one's printer.
func dnsAddons(d *Data) (target clusterdns.Addon, others []clusterdns.Addon, manifests func() ([]byte, error), err error) {
	c := &d.Cfg.ClusterConfiguration
	core, err := coredns.Build(c)
	if err != nil {
		return target, nil, nil, fmt.Errorf("building the CoreDNS addon: %w", err)
	}
	if d.PatchesDir != "" {
		core.PatchDeployment = func(dep *appsv1.Deployment) (*appsv1.Deployment, error) {
			set, err := loadPatches(d)
			if err != nil {
				return nil, err
			}
			return patches.ApplyTo(set, patches.TargetCoreDNSDeployment, dep, d.Out)
		}
	}
	kube, err := kubedns.Build(c)
	if err != nil {
		return target, nil, nil, fmt.Errorf("building the kube-dns addon: %w", err)
	}
	coreAddon := clusterdns.Addon{
		Name: "CoreDNS", Deployment: coredns.Name, Service: core.Service,
		Apply: func(ctx context.Context, cs kubernetes.Interface, withService bool) error {
			a := *core
			if !withService {
				a.Service = nil
			}
			return coredns.Apply(ctx, cs, &a)
		},
	}
	kubeAddon := clusterdns.Addon{
		Name: "kube-dns", Deployment: kubedns.Name, Service: kube.Service,
		Apply: func(ctx context.Context, cs kubernetes.Interface, withService bool) error {
			a := *kube
			if !withService {
				a.Service = nil
			}
			return kubedns.Apply(ctx, cs, &a)
		},
	}
	if c.DNSAddon() == kubeadm.KubeDNS {
		return kubeAddon, []clusterdns.Addon{coreAddon}, kube.Manifests, nil
	}
	return coreAddon, []clusterdns.Addon{kubeAddon}, core.Manifests, nil
}

// runKubeProxyAddon prints or applies the kube-proxy addon. Idempotent
// (see kubeproxy.Apply).
func runKubeProxyAddon(ctx context.Context, d *Data, printOnly bool) error {
	a, err := kubeproxy.Build(d.Cfg)
	if err != nil {
		return fmt.Errorf("building the kube-proxy addon: %w", err)
	}
	if d.PatchesDir != "" {
		a.PatchDaemonSet = func(ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
			set, err := loadPatches(d)
			if err != nil {
				return nil, err
			}
			return patches.ApplyTo(set, patches.TargetKubeProxyDaemonSet, ds, d.Out)
		}
	}
	if printOnly {
		return printAddon(d, a.Manifests)
	}
	if d.Cfg.Proxy.Disabled {
		klog.V(1).Infof("[addons] proxy.disabled is set; the kube-proxy addon is not installed")
		return nil
	}
	// Under --dry-run the client only prints what it would send.
	cs, err := d.Client(ctx)
	if err != nil {
		return err
	}
	if err := kubeproxy.Apply(ctx, cs, a); err != nil {
		return fmt.Errorf("installing the kube-proxy addon: %w", err)
	}
	fmt.Fprintln(d.Out, "[addons] Applied essential addon: kube-proxy")
	return nil
}

func printAddon(d *Data, manifests func() ([]byte, error)) error {
	b, err := manifests()
	if err != nil {
		return err
	}
	_, err = d.Out.Write(b)
	return err
}
