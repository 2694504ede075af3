package upgrade_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// healthCheck returns the named check of h.
func healthCheck(t *testing.T, h upgrade.Health, name string) preflight.Check {
	t.Helper()
	for _, c := range h.ClusterHealthChecks() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check named %s", name)
	return preflight.Check{}
}

func errText(r preflight.Result) string {
	return errors.Join(r.Errors...).Error()
}

// jobStatus makes every Get of a Job answer with the conditions cond
// returns for the n-th Get (counting from 1).
func jobStatus(c *fake.Clientset, cond func(n int) []batchv1.JobCondition) {
	n := 0
	c.PrependReactor("get", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n++
		obj, err := c.Tracker().Get(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		job := obj.(*batchv1.Job).DeepCopy()
		job.Status.Conditions = cond(n)
		return true, job, nil
	})
}

func jobsLeft(t *testing.T, c *fake.Clientset) []batchv1.Job {
	t.Helper()
	l, err := c.BatchV1().Jobs(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func fastHealth(c *fake.Clientset) upgrade.Health {
	return upgrade.Health{
		Client: c, Cluster: planConfig("v1.36.3"), Out: &bytes.Buffer{},
		Now:        func() time.Time { return time.UnixMilli(1764000000123) },
		JobTimeout: 400 * time.Millisecond, JobInterval: 10 * time.Millisecond,
	}
}

func TestCreateJobCompletes(t *testing.T) {
	c := fake.NewClientset()
	jobStatus(c, func(n int) []batchv1.JobCondition {
		if n < 3 {
			return nil
		}
		return []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue},
		}
	})
	var created *batchv1.Job
	c.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		return false, nil, nil
	})
	h := fastHealth(c)
	if r := healthCheck(t, h, "CreateJob").Run(context.Background()); len(r.Errors) > 0 {
		t.Fatalf("CreateJob: %v", errText(r))
	}
	if created == nil {
		t.Fatal("no Job was created")
	}
	if created.Name != "upgrade-health-check-1764000000123" || created.Namespace != "kube-system" {
		t.Errorf("Job %s/%s, want kube-system/upgrade-health-check-1764000000123", created.Namespace, created.Name)
	}
	spec := created.Spec.Template.Spec
	if ctr := spec.Containers; len(ctr) != 1 || ctr[0].Image != images.PauseImage(planConfig("v1.36.3")) || strings.Join(ctr[0].Args, " ") != "-v" {
		t.Errorf("containers = %+v, want the pause image run with -v", ctr)
	}
	if *created.Spec.BackoffLimit != 0 || *created.Spec.ActiveDeadlineSeconds != 1 || spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoffLimit %d, activeDeadlineSeconds %d, restartPolicy %s", *created.Spec.BackoffLimit, *created.Spec.ActiveDeadlineSeconds, spec.RestartPolicy)
	}
	if sc := spec.SecurityContext; sc == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 999 {
		t.Errorf("securityContext = %+v, want a non-root user", sc)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("%d Jobs left after the check", len(left))
	}
}

func TestHealthJobDeadline(t *testing.T) {
	j := upgrade.HealthJob("x", planConfig("v1.36.3"), 15*time.Second)
	if *j.Spec.ActiveDeadlineSeconds != 15 || *j.Spec.TTLSecondsAfterFinished != 20 {
		t.Errorf("activeDeadlineSeconds %d, ttlSecondsAfterFinished %d; want 15 and 20", *j.Spec.ActiveDeadlineSeconds, *j.Spec.TTLSecondsAfterFinished)
	}
	if tol := j.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "node-role.kubernetes.io/control-plane" || tol[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations = %+v, want the control-plane taint", tol)
	}
}

func TestCreateJobFails(t *testing.T) {
	c := fake.NewClientset()
	jobStatus(c, func(int) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
	})
	r := healthCheck(t, fastHealth(c), "CreateJob").Run(context.Background())
	if len(r.Errors) == 0 || !strings.Contains(errText(r), "did not complete: it failed: DeadlineExceeded: Job was active longer") {
		t.Fatalf("CreateJob of a failed Job = %v", r.Errors)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("%d Jobs left after the check", len(left))
	}
}

func TestCreateJobTimesOut(t *testing.T) {
	c := fake.NewClientset()
	start := time.Now()
	r := healthCheck(t, fastHealth(c), "CreateJob").Run(context.Background())
	if len(r.Errors) == 0 || !strings.Contains(errText(r), `the Job "upgrade-health-check-1764000000123" in the namespace "kube-system" did not complete`) ||
		!strings.Contains(errText(r), "no condition of type Complete") {
		t.Fatalf("CreateJob of a Job that never completes = %v", r.Errors)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the check took %v with a 400ms timeout", took)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("%d Jobs left after the check", len(left))
	}
}

func TestCreateJobRefused(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New("not allowed"))
	})
	r := healthCheck(t, fastHealth(c), "CreateJob").Run(context.Background())
	if len(r.Errors) == 0 || !strings.Contains(errText(r), "could not create the Job") || !strings.Contains(errText(r), "not allowed") {
		t.Fatalf("CreateJob refused = %v", r.Errors)
	}
}

func TestCreateJobDryRun(t *testing.T) {
	c := fake.NewClientset()
	h := fastHealth(c)
	var out bytes.Buffer
	h.DryRun, h.Out = true, &out
	if r := healthCheck(t, h, "CreateJob").Run(context.Background()); len(r.Errors) > 0 {
		t.Fatal(errText(r))
	}
	if len(c.Actions()) != 0 {
		t.Errorf("the dry run called the API: %v", c.Actions())
	}
	if !strings.Contains(out.String(), `Would create a Job named "upgrade-health-check"`) {
		t.Errorf("dry-run output: %q", out.String())
	}
}

func TestControlPlaneNodesReady(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
		}
	}
	worker := node("worker", corev1.ConditionFalse)
	worker.Labels = nil
	c := fake.NewClientset(node("cp1", corev1.ConditionTrue), node("cp2", corev1.ConditionUnknown), worker)
	r := healthCheck(t, fastHealth(c), "ControlPlaneNodesReady").Run(context.Background())
	if got := errText(r); len(r.Errors) != 1 || !strings.Contains(got, "not Ready: cp2") || strings.Contains(got, "worker") {
		t.Errorf("ControlPlaneNodesReady = %v, want cp2 alone named", r.Errors)
	}
}

func TestStaticPodManifestHealth(t *testing.T) {
	dir := t.TempDir()
	h := fastHealth(fake.NewClientset())
	h.ManifestDir = dir
	for _, f := range []string{"kube-apiserver.yaml", "kube-scheduler.yaml", "etcd.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := healthCheck(t, h, "StaticPodManifest").Run(context.Background())
	if got := errText(r); len(r.Errors) != 1 || !strings.Contains(got, filepath.Join(dir, "kube-controller-manager.yaml")) || strings.Contains(got, "scheduler") {
		t.Errorf("StaticPodManifest = %v, want the controller-manager's manifest named", r.Errors)
	}
	if err := os.WriteFile(filepath.Join(dir, "kube-controller-manager.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := healthCheck(t, h, "StaticPodManifest").Run(context.Background()); len(r.Errors) > 0 {
		t.Errorf("StaticPodManifest with every manifest = %v", r.Errors)
	}
}
