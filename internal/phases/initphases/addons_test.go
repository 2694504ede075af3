package initphases

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// addonSubPhase returns the named child of the addon phase.
func addonSubPhase(t *testing.T, p workflow.Phase[*Data], name string) workflow.Phase[*Data] {
	t.Helper()
	for _, c := range p.Phases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no sub-phase %q in %q", name, p.Name)
	return workflow.Phase[*Data]{}
}

func addonData(t *testing.T, extra string) (*Data, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	cs := fake.NewClientset()
	out := &bytes.Buffer{}
	d := &Data{
		Cfg:       configtest.InitConfiguration(t, waitTestConfig+extra, "10.0.0.5"),
		Out:       out,
		NewClient: func(context.Context) (kubernetes.Interface, error) { return cs, nil },
	}
	return d, cs, out
}

func TestAddonPhaseApplies(t *testing.T) {
	ctx := context.Background()
	d, cs, out := addonData(t, "")
	p := AddonPhase()
	for run := 1; run <= 2; run++ {
		for _, name := range []string{"coredns", "kube-proxy"} {
			if err := addonSubPhase(t, p, name).Run(ctx, d); err != nil {
				t.Fatalf("run %d of %s: %v", run, name, err)
			}
		}
	}
	want := strings.Repeat("[addons] Applied essential addon: CoreDNS\n[addons] Applied essential addon: kube-proxy\n", 2)
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if _, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}

func TestAddonPhaseDisabled(t *testing.T) {
	ctx := context.Background()
	d, cs, out := addonData(t, "dns:\n  disabled: true\nproxy:\n  disabled: true\n")
	d.NewClient = func(context.Context) (kubernetes.Interface, error) {
		return nil, errors.New("no client should be needed")
	}
	p := AddonPhase()
	for _, name := range []string{"coredns", "kube-proxy"} {
		if err := addonSubPhase(t, p, name).Run(ctx, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if out.Len() != 0 {
		t.Errorf("disabled addons printed:\n%s", out)
	}
	if acts := cs.Actions(); len(acts) != 0 {
		t.Errorf("disabled addons made API calls: %v", acts)
	}
}

func TestAddonPhasePrintManifest(t *testing.T) {
	ctx := context.Background()
	// Printing works without a cluster, and also for a disabled addon.
	d, cs, out := addonData(t, "dns:\n  disabled: true\n")
	p := AddonPhase()
	coredns := addonSubPhase(t, p, "coredns")
	if err := coredns.LocalFlags.Set(PrintManifestFlag, "true"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"coredns", "kube-proxy"} {
		if err := addonSubPhase(t, p, name).Run(ctx, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	got := out.String()
	if !strings.HasPrefix(got, "---\napiVersion: apps/v1\nkind: Deployment\n") || strings.Contains(got, "[addons]") {
		t.Errorf("output does not start with the CoreDNS Deployment or reports an install:\n%s", got)
	}
	for _, kind := range []string{"kind: Service\n", "kind: DaemonSet\n", "kind: RoleBinding\n", "name: kube-dns\n"} {
		if !strings.Contains(got, kind) {
			t.Errorf("output lacks %q", kind)
		}
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("printing made API calls: %v", cs.Actions())
	}
}

func TestAddonPhaseDryRun(t *testing.T) {
	ctx := context.Background()
	d, cs, out := addonData(t, "")
	d.DryRun = true
	d.NewClient = nil // the dry-run client of Data.Client
	p := AddonPhase()
	for _, name := range []string{"coredns", "kube-proxy"} {
		if err := addonSubPhase(t, p, name).Run(ctx, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	got := out.String()
	for _, want := range []string{
		`[dryrun] Would perform action CREATE on resource "deployments" in API group "apps/v1"`,
		`[dryrun] Would perform action CREATE on resource "services" in API group "core/v1"`,
		"[addons] Applied essential addon: CoreDNS\n",
		`[dryrun] Would perform action CREATE on resource "daemonsets" in API group "apps/v1"`,
		"[addons] Applied essential addon: kube-proxy\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("a dry run used the cluster's client: %v", cs.Actions())
	}
}

func TestAddonPhaseTree(t *testing.T) {
	p := AddonPhase()
	var names []string
	for _, c := range p.Phases {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "all,coredns,kube-proxy" {
		t.Errorf("sub-phases %v", names)
	}
	if all := addonSubPhase(t, p, "all"); !all.RunAllSiblings || all.LocalFlags != nil {
		t.Errorf("all: RunAllSiblings %v, local flags %v (upstream's has no --print-manifest)", all.RunAllSiblings, all.LocalFlags)
	}
	for _, name := range []string{"coredns", "kube-proxy"} {
		if f := addonSubPhase(t, p, name).LocalFlags; f == nil || f.Lookup(PrintManifestFlag) == nil {
			t.Errorf("%s has no --%s", name, PrintManifestFlag)
		}
	}
	if w := WaitControlPlanePhase(); w.Name != "wait-control-plane" || len(w.InheritFlags) != 0 {
		t.Errorf("wait-control-plane: name %q, flags %v (upstream's takes none)", w.Name, w.InheritFlags)
	}
}
