package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// TestUpgradeHealthChecks runs the upgrade's cluster health checks against
// a real API server and controller-manager that have no node to run Pods
// on: the API server accepts the CreateJob check's Job as written, the Job
// controller makes its Pod, the check fails when the Pod never runs, and
// afterwards neither the Job nor its Pod is left. A control-plane Node
// without a Ready condition fails ControlPlaneNodesReady. (The Job running
// to completion on a real kubelet is part of the upgrade e2e test.)
func TestUpgradeHealthChecks(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	ctx := testContext(t, 3*time.Minute)
	c, err := cp.ClientFor(cp.SuperAdminKubeconfig()) // no init phase made admin.conf's binding
	if err != nil {
		t.Fatal(err)
	}
	h := upgrade.Health{
		Client:      c,
		Cluster:     &kubeadm.ClusterConfiguration{ImageRepository: images.DefaultRepository},
		ManifestDir: cp.HostPath("/etc/kubernetes/manifests"),
		JobTimeout:  8 * time.Second,
	}
	checks := map[string]preflight.Check{}
	for _, ch := range h.ClusterHealthChecks() {
		checks[ch.Name] = ch
	}

	t.Run("CreateJob", func(t *testing.T) {
		// Pods are refused until the controller-manager has made the
		// namespace's default ServiceAccount.
		for {
			_, err := c.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("no default ServiceAccount in kube-system: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		pods, err := c.CoreV1().Pods(metav1.NamespaceSystem).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer pods.Stop()
		r := checks["CreateJob"].Run(ctx)
		got := errors.Join(r.Errors...)
		if got == nil || !strings.Contains(got.Error(), "did not complete") {
			t.Fatalf("CreateJob with no node to run on = %v, want a Job that did not complete", got)
		}
		t.Logf("CreateJob: %v", got)
		jobs, err := c.BatchV1().Jobs(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs.Items) != 0 {
			t.Errorf("Jobs left: %v", jobs.Items)
		}
		// The Job controller made the Job's Pod; the garbage collector
		// removes it once the Job is gone.
		var podName string
		for podName == "" {
			select {
			case ev := <-pods.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok && strings.HasPrefix(p.Name, upgrade.HealthJobPrefix+"-") {
					podName = p.Name
				}
			case <-ctx.Done():
				t.Fatal("the Job controller made no Pod for the health check's Job")
			}
		}
		deadline := time.Now().Add(time.Minute)
		for {
			_, err := c.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, podName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the Pod %s of the deleted Job is still there after a minute (%v)", podName, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("the Job as written is valid", func(t *testing.T) {
		j := upgrade.HealthJob(upgrade.HealthJobPrefix+"-dry", h.Cluster, 15*time.Second)
		if _, err := c.BatchV1().Jobs(metav1.NamespaceSystem).Create(ctx, j, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("the API server refuses the health check's Job: %v", err)
		}
	})

	t.Run("ControlPlaneNodesReady", func(t *testing.T) {
		if r := checks["ControlPlaneNodesReady"].Run(ctx); len(r.Errors) > 0 {
			t.Fatalf("with no node: %v", r.Errors)
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-not-ready", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := checks["ControlPlaneNodesReady"].Run(ctx)
		if got := errors.Join(r.Errors...); got == nil || !strings.Contains(got.Error(), "cp-not-ready") {
			t.Errorf("with a control-plane node that never reported: %v", got)
		}
	})

	t.Run("StaticPodManifest", func(t *testing.T) {
		if r := checks["StaticPodManifest"].Run(ctx); len(r.Errors) > 0 {
			t.Errorf("on the control plane's own folder: %v", r.Errors)
		}
	})
}
