package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/addons/coredns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubeproxy"
	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// addonsConfigPath is where the addon tests put their configuration files
// inside the control plane's root folder.
const addonsConfigPath = "/addons.yaml"

// addonsUpstreamDir is where hack/build-upstream.sh leaves the upstream
// binaries, seen from this package's folder.
func addonsUpstreamDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".cache", "upstream", controlplane.KubernetesVersion))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// addonsRequire skips the test when a prerequisite is missing, or fails it
// when KUBEADM_INTEGRATION=1 asks for the integration tests to run for
// sure.
func addonsRequire(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(controlplane.IntegrationEnv) == "1" {
		t.Fatalf("%s", msg)
	}
	t.Skipf("skipping: %s", msg)
}

// addonsKubeadms returns our kubeadm, built into a temporary folder, and
// upstream's, skipping the test when upstream's or root is missing.
func addonsKubeadms(t *testing.T) (ours, upstream string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	upstream = filepath.Join(addonsUpstreamDir(t), "kubeadm")
	_, err := os.Stat(upstream)
	addonsRequire(t, err == nil, "upstream kubeadm not built at %s; run hack/build-upstream.sh", upstream)
	addonsRequire(t, os.Geteuid() == 0, "needs root (kubeadm --rootfs)")
	ours = filepath.Join(t.TempDir(), "kubeadm")
	cmd := exec.Command("go", "build", "-o", ours, "./cmd/kubeadm")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building our kubeadm: %v\n%s", err, out)
	}
	return ours, upstream
}

// TestAddonManifestsMatchUpstream compares, for every golden configuration
// of the addon packages, what "init phase addon X --print-manifest" prints
// with our kubeadm and with upstream's, as parsed objects.
func TestAddonManifestsMatchUpstream(t *testing.T) {
	ours, upstream := addonsKubeadms(t)
	configs, err := filepath.Glob(filepath.Join("..", "..", "internal", "addons", "coredns", "testdata", "configs", "*.yaml"))
	if err != nil || len(configs) == 0 {
		t.Fatalf("no golden configurations found: %v", err)
	}
	for _, cfgPath := range configs {
		name := strings.TrimSuffix(filepath.Base(cfgPath), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, addon := range []string{"coredns", "kube-proxy"} {
				printed := map[string][]byte{}
				for who, bin := range map[string]string{"ours": ours, "upstream": upstream} {
					root := t.TempDir()
					if err := os.WriteFile(filepath.Join(root, "cfg.yaml"), data, 0o600); err != nil {
						t.Fatal(err)
					}
					cmd := exec.Command(bin, "init", "phase", "addon", addon, "--print-manifest", "--config", "/cfg.yaml", "--rootfs", root)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					if err != nil {
						t.Fatalf("%s kubeadm, %s: %v\n%s", who, addon, err, stderr.String())
					}
					printed[who] = out
				}
				want := addonsParseStream(t, printed["upstream"])
				got := addonsParseStream(t, printed["ours"])
				if diffs := addonsDiff(want, got); len(diffs) > 0 {
					t.Errorf("%s: our manifests differ from upstream's:\n%s", addon, strings.Join(diffs, "\n"))
				}
				if !reflect.DeepEqual(addonsOrder(printed["upstream"]), addonsOrder(printed["ours"])) {
					t.Errorf("%s: documents in order %v, upstream %v", addon, addonsOrder(printed["ours"]), addonsOrder(printed["upstream"]))
				}
			}
		})
	}
}

// addonsParseStream parses a YAML stream into objects keyed by
// "Kind namespace/name": each document is decoded strictly into its API
// type (so that, say, an explicit "readOnly: false" and a missing one are
// the same, as for the API server) and turned back into a map without null
// fields, empty maps and lists, and status.
func addonsParseStream(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	objs := map[string]any{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(stream), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		obj, err := scheme.Scheme.New(tm.GroupVersionKind())
		if err != nil {
			t.Fatalf("document of kind %s: %v", tm.GroupVersionKind(), err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("decoding %s: %v\n%s", tm.Kind, err, doc)
		}
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		objs[addonsKey(m)] = addonsPrune(m)
	}
	return objs
}

func addonsOrder(stream []byte) []string {
	var kinds []string
	for _, m := range regexp.MustCompile(`(?m)^kind: (\S+)$`).FindAllStringSubmatch(string(stream), -1) {
		kinds = append(kinds, m[1])
	}
	return kinds
}

func addonsKey(m map[string]any) string {
	meta, _ := m["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", m["kind"], meta["namespace"], meta["name"])
}

// addonsPrune drops null values and empty maps and lists.
func addonsPrune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := addonsPrune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = addonsPrune(e)
		}
		return out
	default:
		return v
	}
}

// addonsDiff lists, path by path, how got differs from want.
func addonsDiff(want, got map[string]any) []string {
	var diffs []string
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		if wok && gok {
			keys := map[string]bool{}
			for k := range wm {
				keys[k] = true
			}
			for k := range gm {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				walk(path+"."+k, wm[k], gm[k])
			}
			return
		}
		wl, wok := w.([]any)
		gl, gok := g.([]any)
		if wok && gok && len(wl) == len(gl) {
			for i := range wl {
				walk(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i])
			}
			return
		}
		if !reflect.DeepEqual(w, g) {
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			diffs = append(diffs, fmt.Sprintf("%s: want %s, got %s", path, wj, gj))
		}
	}
	walk("", any(want), any(got))
	return diffs
}

// addonObjects are the objects the two addons consist of.
var addonObjects = []struct{ kind, ns, name string }{
	{"ServiceAccount", "kube-system", coredns.Name},
	{"ClusterRole", "", coredns.ClusterRoleName},
	{"ClusterRoleBinding", "", coredns.ClusterRoleName},
	{"ConfigMap", "kube-system", coredns.Name},
	{"Deployment", "kube-system", coredns.Name},
	{"Service", "kube-system", coredns.ServiceName},
	{"ServiceAccount", "kube-system", kubeproxy.Name},
	{"ClusterRoleBinding", "", kubeproxy.NodeProxierBinding},
	{"Role", "kube-system", kubeproxy.Name},
	{"RoleBinding", "kube-system", kubeproxy.Name},
	{"ConfigMap", "kube-system", kubeproxy.Name},
	{"DaemonSet", "kube-system", kubeproxy.Name},
}

// addonsDump reads every addon object from the cluster, as a map without
// what the cluster alone decides (uid, resourceVersion, timestamps,
// managedFields, generation, status, the Deployment controller's revision
// annotation). Missing objects are left out.
func addonsDump(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range addonObjects {
		var obj any
		var err error
		get := metav1.GetOptions{}
		switch o.kind {
		case "ServiceAccount":
			obj, err = cs.CoreV1().ServiceAccounts(o.ns).Get(ctx, o.name, get)
		case "ClusterRole":
			obj, err = cs.RbacV1().ClusterRoles().Get(ctx, o.name, get)
		case "ClusterRoleBinding":
			obj, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, o.name, get)
		case "Role":
			obj, err = cs.RbacV1().Roles(o.ns).Get(ctx, o.name, get)
		case "RoleBinding":
			obj, err = cs.RbacV1().RoleBindings(o.ns).Get(ctx, o.name, get)
		case "ConfigMap":
			obj, err = cs.CoreV1().ConfigMaps(o.ns).Get(ctx, o.name, get)
		case "Service":
			obj, err = cs.CoreV1().Services(o.ns).Get(ctx, o.name, get)
		case "Deployment":
			obj, err = cs.AppsV1().Deployments(o.ns).Get(ctx, o.name, get)
		case "DaemonSet":
			obj, err = cs.AppsV1().DaemonSets(o.ns).Get(ctx, o.name, get)
		}
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatalf("reading %s %s/%s: %v", o.kind, o.ns, o.name, err)
		}
		js, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		meta := m["metadata"].(map[string]any)
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
			delete(meta, f)
		}
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, "deployment.kubernetes.io/revision")
		}
		out[o.kind+" "+o.ns+"/"+o.name] = addonsPrune(m)
	}
	return out
}

// addonsCluster is one control plane with a way to run a kubeadm on it.
type addonsCluster struct {
	cp      *controlplane.ControlPlane
	kubeadm string
	cs      kubernetes.Interface
}

func newAddonsCluster(t *testing.T, ours, kubeadmBin string) *addonsCluster {
	t.Helper()
	sched := filepath.Join(addonsUpstreamDir(t), "kube-scheduler")
	_, err := os.Stat(sched)
	cp := controlplane.Start(t, controlplane.Options{Kubeadm: ours, Scheduler: err == nil})
	for name, cfg := range map[string]string{
		addonsConfigPath:  controlplane.DefaultConfig(cp.AdvertiseAddress(), controlplane.DefaultNodeName),
		"/disabled.yaml":  controlplane.DefaultConfig(cp.AdvertiseAddress(), controlplane.DefaultNodeName) + "dns:\n  disabled: true\nproxy:\n  disabled: true\n",
		"/shortwait.yaml": strings.Replace(controlplane.DefaultConfig(cp.AdvertiseAddress(), controlplane.DefaultNodeName), "nodeRegistration:", "timeouts:\n  controlPlaneComponentHealthCheck: 3s\n  kubeletHealthCheck: 3s\nnodeRegistration:", 1),
		"/patched.yaml":   strings.Replace(controlplane.DefaultConfig(cp.AdvertiseAddress(), controlplane.DefaultNodeName), "nodeRegistration:", "patches:\n  directory: /patches\nnodeRegistration:", 1),
		// A patch of the CoreDNS Deployment: its size, its Pods' annotations
		// and an extra argument.
		"/patches/corednsdeployment+merge.yaml": "spec:\n  replicas: 5\n  template:\n    metadata:\n      annotations:\n        example.com/patched: \"yes\"\n",
		"/patches/corednsdeployment1+json.json": `[{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "-dns.port=53"}]`,
	} {
		if err := os.MkdirAll(filepath.Dir(cp.HostPath(name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cp.HostPath(name), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := &addonsCluster{cp: cp, kubeadm: kubeadmBin, cs: cp.Client()}
	c.allowAdmin(t.Context(), t)
	return c
}

// allowAdmin binds kubeadm:cluster-admins to cluster-admin, as init's
// phases do before any addon is applied, and waits until admin.conf may
// read Deployments in kube-system (the authorizer learns of a new binding
// from a watch). The addon phase alone leaves making that binding to its
// client set-up: upstream's appears to create the binding and go on without
// waiting for the authorizer to see it: its first request was Forbidden
// here in 2 of about 10 runs, with no binding before the run. Ours waits
// (apiclient.AdminClient). That race is not what this test compares.
func (c *addonsCluster) allowAdmin(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, apiclient.ClusterAdminsBinding(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("binding kubeadm:cluster-admins: %v", err)
	}
	admin, err := c.cp.ClientFor(c.cp.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	addonsRetry(ctx, t, "admin.conf reading Deployments", func() error {
		_, err := admin.AppsV1().Deployments(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// run runs the cluster's kubeadm inside the control plane's namespace on
// its root folder and returns its standard output; standard error is
// logged. A failure fails the test unless mayFail.
func (c *addonsCluster) run(t *testing.T, mayFail bool, args ...string) (string, error) {
	t.Helper()
	cmd := c.cp.Command(c.kubeadm, append(args, "--rootfs", c.cp.Root())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A kubeadm that waits for something that never comes is stopped.
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil && !mayFail {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(filepath.Dir(c.kubeadm)), strings.Join(args, " "), err, out, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s, stderr:\n%s", c.kubeadm, strings.Join(args, " "), stderr.String())
	}
	return string(out), err
}

// mutate changes the addon objects as a user might: a customized Corefile
// and a scaled Deployment (both kept by a new run) and changes a new run
// undoes.
func (c *addonsCluster) mutate(ctx context.Context, t *testing.T) {
	t.Helper()
	cs := c.cs
	ns := metav1.NamespaceSystem
	addonsRetry(ctx, t, "customizing the Corefile", func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, coredns.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data[coredns.CorefileKey] = strings.Replace(cm.Data[coredns.CorefileKey], "errors", "errors\n    log", 1)
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	addonsRetry(ctx, t, "scaling CoreDNS", func() error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, coredns.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		three := int32(3)
		d.Spec.Replicas = &three
		_, err = cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	addonsRetry(ctx, t, "changing the kube-proxy image", func() error {
		d, err := cs.AppsV1().DaemonSets(ns).Get(ctx, kubeproxy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "example.invalid/kube-proxy:custom"
		_, err = cs.AppsV1().DaemonSets(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	addonsRetry(ctx, t, "changing the kube-proxy configuration", func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, kubeproxy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data[kubeproxy.ConfigKey] = "# changed by hand"
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	addonsRetry(ctx, t, "trimming the CoreDNS ClusterRole", func() error {
		r, err := cs.RbacV1().ClusterRoles().Get(ctx, coredns.ClusterRoleName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r.Rules = r.Rules[:1]
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
		return err
	})
	addonsRetry(ctx, t, "labelling the DNS Service", func() error {
		s, err := cs.CoreV1().Services(ns).Get(ctx, coredns.ServiceName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels["example.invalid/extra"] = "yes"
		s.Spec.Ports = s.Spec.Ports[:1]
		_, err = cs.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
}

// addonsRetry retries f (conflicts with the controllers) until it succeeds
// or ctx ends.
func addonsRetry(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestAddonsAgainstUpstream applies the addons with upstream kubeadm on one
// fresh control plane and with ours on another, and compares the objects;
// then changes them the same way on both, runs each kubeadm again, and
// compares what each kept and restored. On ours it also checks that a
// second run changes nothing and that a full init with the addons
// disabled leaves them out. Then it checks wait-control-plane on both.
func TestAddonsAgainstUpstream(t *testing.T) {
	ours, upstream := addonsKubeadms(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	theirs := newAddonsCluster(t, ours, upstream)
	mine := newAddonsCluster(t, ours, ours)
	applyArgs := []string{"init", "phase", "addon", "all", "--config", addonsConfigPath, "--kubeconfig", "/etc/kubernetes/admin.conf"}

	t.Run("disabled addons are left out of init", func(t *testing.T) {
		skip := "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane,upload-config,upload-certs,mark-control-plane,bootstrap-token,kubelet-finalize,show-join-command"
		for who, c := range map[string]*addonsCluster{"upstream": theirs, "ours": mine} {
			out, _ := c.run(t, false, "init", "--config", "/disabled.yaml", "--skip-phases", skip)
			if strings.Contains(out, "[addons]") {
				t.Errorf("%s: init with the addons disabled printed:\n%s", who, out)
			}
			if got := addonsDump(ctx, t, c.cs); len(got) != 0 {
				t.Errorf("%s: init with the addons disabled created %d addon objects", who, len(got))
			}
		}
	})

	var first map[string]any
	t.Run("objects match upstream's", func(t *testing.T) {
		want := "[addons] Applied essential addon: CoreDNS\n[addons] Applied essential addon: kube-proxy\n"
		for who, c := range map[string]*addonsCluster{"upstream": theirs, "ours": mine} {
			if out, _ := c.run(t, false, applyArgs...); out != want {
				t.Errorf("%s printed:\n%s\nwant:\n%s", who, out, want)
			}
		}
		upstreamObjs := addonsDump(ctx, t, theirs.cs)
		first = addonsDump(ctx, t, mine.cs)
		if len(upstreamObjs) != len(addonObjects) {
			t.Fatalf("upstream made %d of the %d addon objects", len(upstreamObjs), len(addonObjects))
		}
		if diffs := addonsDiff(upstreamObjs, first); len(diffs) > 0 {
			t.Errorf("our addon objects differ from upstream's:\n%s", strings.Join(diffs, "\n"))
		}
	})

	t.Run("a second run changes nothing", func(t *testing.T) {
		mine.run(t, false, applyArgs...)
		if diffs := addonsDiff(first, addonsDump(ctx, t, mine.cs)); len(diffs) > 0 {
			t.Errorf("the second run changed:\n%s", strings.Join(diffs, "\n"))
		}
	})

	t.Run("changed objects converge as upstream's", func(t *testing.T) {
		for _, c := range []*addonsCluster{theirs, mine} {
			c.mutate(ctx, t)
			c.run(t, false, applyArgs...)
		}
		want := addonsDump(ctx, t, theirs.cs)
		got := addonsDump(ctx, t, mine.cs)
		if diffs := addonsDiff(want, got); len(diffs) > 0 {
			t.Errorf("after the same changes and a new run, ours differ from upstream's:\n%s", strings.Join(diffs, "\n"))
		}
		// What upstream keeps (checked here so a change upstream shows).
		d, err := mine.cs.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, coredns.Name, metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != 3 {
			t.Errorf("the scaled CoreDNS Deployment was not kept: %v", err)
		}
	})

	t.Run("corednsdeployment patches", func(t *testing.T) {
		// The Deployment was scaled to 3 above; the patch's size wins.
		args := []string{"init", "phase", "addon", "coredns", "--config", "/patched.yaml", "--kubeconfig", "/etc/kubernetes/admin.conf"}
		upOut, _ := theirs.run(t, false, args...)
		ourOut, _ := mine.run(t, false, args...)
		if ourOut != upOut {
			t.Errorf("ours printed:\n%s\nupstream printed:\n%s", ourOut, upOut)
		}
		want := addonsDump(ctx, t, theirs.cs)
		got := addonsDump(ctx, t, mine.cs)
		if diffs := addonsDiff(want, got); len(diffs) > 0 {
			t.Errorf("with the same patches, ours differ from upstream's:\n%s", strings.Join(diffs, "\n"))
		}
		d, err := mine.cs.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, coredns.Name, metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != 5 || d.Spec.Template.Annotations["example.com/patched"] != "yes" ||
			!slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "-dns.port=53") {
			t.Errorf("the CoreDNS Deployment is not patched: %v", err)
		}
	})

	t.Run("wait-control-plane", func(t *testing.T) {
		testWaitControlPlane(ctx, t, theirs, mine)
	})
}

// testWaitControlPlane checks our wait-control-plane in process against
// the running components (the API server with the admin client, the
// others through their health endpoints), that it fails within its
// timeout when the controller manager's manifest points at a wrong port,
// and that our binary prints what upstream's does when a kubelet answers.
func testWaitControlPlane(ctx context.Context, t *testing.T, theirs, mine *addonsCluster) {
	if _, err := os.Stat(filepath.Join(addonsUpstreamDir(t), "kube-scheduler")); err != nil {
		t.Skip("kube-scheduler not built; run hack/build-upstream.sh kube-scheduler")
	}
	cp := mine.cp
	httpClient := &http.Client{Transport: &http.Transport{
		DialContext:       cp.DialContext,
		TLSClientConfig:   insecureTLS(),
		DisableKeepAlives: true,
	}}
	data := func(t *testing.T, configPath, manifestDir string) (*initphases.Data, *bytes.Buffer) {
		cfg := defaultedConfig(ctx, t, cp, configPath)
		out := &bytes.Buffer{}
		return &initphases.Data{
			Cfg:         cfg,
			ManifestDir: manifestDir,
			Out:         out,
			NewClient: func(context.Context) (kubernetes.Interface, error) {
				return cp.ClientFor(cp.AdminKubeconfig())
			},
		}, out
	}
	checks := initphases.HealthChecks{HTTPClient: httpClient, SkipKubelet: true}

	t.Run("healthy components", func(t *testing.T) {
		d, out := data(t, addonsConfigPath, cp.HostPath(initphases.ManifestsDir))
		if err := initphases.WaitForControlPlane(ctx, d, checks); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if !strings.Contains(out.String(), "[control-plane-check] "+c+" is healthy after ") {
				t.Errorf("no healthy line for %s:\n%s", c, out)
			}
		}
	})

	t.Run("controller manager on a wrong port", func(t *testing.T) {
		dir := t.TempDir()
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			b, err := os.ReadFile(cp.HostPath(filepath.Join(initphases.ManifestsDir, c+".yaml")))
			if err != nil {
				t.Fatal(err)
			}
			if c == "kube-controller-manager" {
				b = bytes.Replace(b, []byte("- --bind-address=127.0.0.1\n"), []byte("- --bind-address=127.0.0.1\n    - --secure-port=10999\n"), 1)
			}
			if err := os.WriteFile(filepath.Join(dir, c+".yaml"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		d, out := data(t, "/shortwait.yaml", dir)
		began := time.Now()
		err := initphases.WaitForControlPlane(ctx, d, checks)
		took := time.Since(began)
		if err == nil || !strings.Contains(err.Error(), "kube-controller-manager at https://127.0.0.1:10999/healthz") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("error %v, want the controller manager at port 10999 refusing connections\n%s", err, out)
		}
		if took > 10*time.Second {
			t.Errorf("failing took %v with a 3s timeout", took)
		}
		for _, want := range []string{"kube-controller-manager is not healthy after 3", "kube-apiserver is healthy after", "kube-scheduler is healthy after", "crictl --runtime-endpoint"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("output matches upstream's", func(t *testing.T) {
		var outputs [2]string
		for i, c := range []*addonsCluster{theirs, mine} {
			addonsNodeNetwork(t, c.cp)
			addonsFakeKubelet(t, c.cp)
			out, _ := c.run(t, false, "init", "phase", "wait-control-plane")
			outputs[i] = addonsNormalizeWait(out)
		}
		if !strings.Contains(outputs[0], "[control-plane-check] kube-scheduler is healthy after D") {
			t.Errorf("upstream's wait-control-plane did not see a healthy control plane:\n%s", outputs[0])
		}
		if outputs[0] != outputs[1] {
			t.Errorf("wait-control-plane printed (durations and order of results aside):\n%s\nupstream:\n%s", outputs[1], outputs[0])
		}
	})
}

// addonsNodeNetwork gives the namespace what a node has and the fast tier
// lacks, so that finding the default address works as on a node: an
// interface with the advertise address and a default route through it.
func addonsNodeNetwork(t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	for _, args := range [][]string{
		{"link", "add", "node0", "type", "veth", "peer", "name", "node1"},
		{"link", "set", "node0", "up"},
		{"link", "set", "node1", "up"},
		{"addr", "add", cp.AdvertiseAddress().String() + "/24", "dev", "node0"},
		{"route", "add", "default", "via", "10.199.0.1", "dev", "node0"},
	} {
		if out, err := cp.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
}

// addonsFakeKubelet answers the kubelet's health endpoint inside the
// namespace until the test ends.
func addonsFakeKubelet(t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	holder := cp.Command("sleep", "infinity")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	// nsenter enters the namespace, then becomes sleep: wait for the first.
	nsPath := fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err := os.Readlink(nsPath); err == nil && l != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper process did not enter the control plane's namespace")
		}
	}
	ns, err := os.Open(nsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The socket is made on a thread inside the namespace and keeps it.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer self.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		l, lerr := net.Listen("tcp", "127.0.0.1:10248")
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with this goroutine.
			done <- result{err: err}
			return
		}
		runtime.UnlockOSThread()
		done <- result{l, lerr}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listening as the kubelet: %v", r.err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })}
	go func() { _ = srv.Serve(r.l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

var addonsDuration = regexp.MustCompile(`after [0-9.]+(ns|µs|ms|s|m[0-9.]+s)$`)

// addonsNormalizeWait replaces durations and sorts the result lines, whose
// order depends on which component answered first.
func addonsNormalizeWait(out string) string {
	var head, results []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		l = addonsDuration.ReplaceAllString(l, "after D")
		if strings.HasSuffix(l, "after D") && strings.HasPrefix(l, "[control-plane-check]") {
			results = append(results, l)
		} else {
			head = append(head, l)
		}
	}
	sort.Strings(results)
	return strings.Join(append(head, results...), "\n")
}

// insecureTLS is how health endpoints with self-signed certificates are
// asked, as the kubelet's probes do.
func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec // probes do not verify
