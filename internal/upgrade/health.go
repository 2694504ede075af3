package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

const (
	// HealthJobPrefix starts the name of the Job the CreateJob check runs.
	HealthJobPrefix = "upgrade-health-check"
	// healthJobTimeout bounds how long the CreateJob check waits for its
	// Job to complete (as upstream); the Job's own deadline is the same.
	healthJobTimeout = 15 * time.Second
	// healthJobInterval separates two looks at the Job.
	healthJobInterval = 250 * time.Millisecond
)

// Health holds what the cluster health checks of "upgrade plan" and
// "upgrade apply" need.
type Health struct {
	Client  kubernetes.Interface
	Cluster *kubeadm.ClusterConfiguration
	// ManifestDir is where this node's static Pod manifests are.
	ManifestDir string
	// UnitRoot prefixes the unit folder ("" is /): with the
	// HostProcessControlPlane feature gate, kubeadm's systemd units take
	// the manifests' place.
	UnitRoot string
	// CheckpointDir keeps the checkpoints of a self-hosted control plane:
	// with the SelfHosting feature gate they take the place of the API
	// server's, controller manager's and scheduler's manifests.
	CheckpointDir string
	// DryRun: the CreateJob check only says what it would do.
	DryRun bool
	// Out receives the dry run's line.
	Out io.Writer
	Now func() time.Time
	// JobTimeout and JobInterval default to 15s and 250ms.
	JobTimeout, JobInterval time.Duration
}

// ClusterHealthChecks are the checks "kubeadm upgrade plan" and "kubeadm
// upgrade apply" run before they change anything, under upstream's names
// (so that --ignore-preflight-errors=CreateJob works the same): a Job runs
// to completion (the scheduler, the controller-manager and a kubelet
// work), every control-plane node is Ready, and this node has its static
// Pod manifests.
func (h Health) ClusterHealthChecks() []preflight.Check {
	return []preflight.Check{
		{Name: "CreateJob", Run: h.createJob},
		{Name: "ControlPlaneNodesReady", Run: h.controlPlaneNodesReady},
		{Name: "StaticPodManifest", Run: h.staticPodManifests},
	}
}

func fail(err error) preflight.Result { return preflight.Result{Errors: []error{err}} }

// HealthJob is the Job of the CreateJob check: the pause image run with
// -v, which prints its version and exits, as a non-root user, allowed on
// control-plane nodes, never retried, removed by the cluster soon after it
// ends and stopped by it if it does not end in time.
func HealthJob(name string, cluster *kubeadm.ClusterConfiguration, timeout time.Duration) *batchv1.Job {
	secs := int64((timeout + time.Second - 1) / time.Second) // at least 1
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(secs),
			TTLSecondsAfterFinished: ptr.To(int32(secs) + 5),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser:    ptr.To[int64](999),
						RunAsGroup:   ptr.To[int64](999),
						RunAsNonRoot: ptr.To(true),
					},
					Tolerations: []corev1.Toleration{{Key: noderole.ControlPlaneLabel, Effect: corev1.TaintEffectNoSchedule}},
					Containers: []corev1.Container{{
						Name:  HealthJobPrefix,
						Image: images.PauseImage(cluster),
						Args:  []string{"-v"},
					}},
				},
			},
		},
	}
}

// createJob creates a Job named after the time and waits until it has
// completed. Whatever the outcome, the Job and its Pod are deleted before
// it returns (the Job's TTL and deadline cover a kubeadm that was killed).
func (h Health) createJob(ctx context.Context) preflight.Result {
	ns := metav1.NamespaceSystem
	if h.DryRun {
		fmt.Fprintf(h.Out, "[upgrade/health] Would create a Job named %q plus a suffix in the namespace %q and wait until it completes\n", HealthJobPrefix, ns)
		return preflight.Result{}
	}
	timeout, interval := h.JobTimeout, h.JobInterval
	if timeout <= 0 {
		timeout = healthJobTimeout
	}
	if interval <= 0 {
		interval = healthJobInterval
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	name := fmt.Sprintf("%s-%d", HealthJobPrefix, now().UnixMilli())
	jobs := h.Client.BatchV1().Jobs(ns)
	// One deadline for creating the Job and for its completion.
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	err := apiclient.Poll(wctx, interval, timeout, func(ctx context.Context) (bool, error) {
		_, err := jobs.Create(ctx, HealthJob(name, h.Cluster, timeout), metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return false, apiclient.Retry(err)
	})
	if err != nil {
		return fail(fmt.Errorf("could not create the Job %q in the namespace %q: %w", name, ns, err))
	}
	defer func() {
		// A context of its own: the caller's may be what ended the wait.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = jobs.Delete(dctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	}()

	err = apiclient.Poll(wctx, interval, timeout, func(ctx context.Context) (bool, error) {
		job, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, apiclient.Retry(err)
		}
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return true, nil
			case batchv1.JobFailed:
				return false, fmt.Errorf("it failed: %s", conditionText(c))
			}
		}
		return false, apiclient.Retry(fmt.Errorf("no condition of type %s", batchv1.JobComplete))
	})
	if err != nil {
		return fail(fmt.Errorf("the Job %q in the namespace %q did not complete: %w", name, ns, err))
	}
	return preflight.Result{}
}

func conditionText(c batchv1.JobCondition) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Reason != "":
		return c.Reason
	}
	return c.Message
}

// controlPlaneNodesReady fails when a control-plane node is not Ready.
func (h Health) controlPlaneNodesReady(ctx context.Context) preflight.Result {
	nodes, err := h.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: noderole.ControlPlaneLabel})
	if err != nil {
		return fail(fmt.Errorf("listing the nodes labelled %s: %w", noderole.ControlPlaneLabel, err))
	}
	var notReady []string
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			notReady = append(notReady, n.Name)
		}
	}
	if len(notReady) > 0 {
		return fail(fmt.Errorf("control-plane nodes not Ready: %s", strings.Join(notReady, ", ")))
	}
	return preflight.Result{}
}

// staticPodManifests fails when this node lacks a control-plane manifest,
// or, with the HostProcessControlPlane feature gate, a control-plane unit,
// or, with the SelfHosting feature gate, a checkpoint (the upgrade runs on
// a control-plane node, not from afar).
func (h Health) staticPodManifests(context.Context) preflight.Result {
	comps := staticpod.ControlPlaneComponents()
	if h.Cluster.Etcd.External == nil {
		comps = append(comps, staticpod.Etcd)
	}
	units := hostprocess.Enabled(h.Cluster.FeatureGates)
	checkpoints := selfhosting.Enabled(h.Cluster.FeatureGates) && h.CheckpointDir != ""
	var missing []string
	for _, c := range comps {
		p := staticpod.ManifestPath(h.ManifestDir, c)
		switch {
		case units:
			p = hostprocess.UnitPath(h.UnitRoot, c)
		case checkpoints && c != staticpod.Etcd:
			p = selfhosting.CheckpointPath(h.CheckpointDir, c)
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, p)
		} else if err != nil {
			return fail(err)
		}
	}
	if len(missing) > 0 {
		what := "static Pod manifests"
		switch {
		case units:
			what = "systemd units"
		case checkpoints:
			what = "static Pod manifests or checkpoints"
		}
		return fail(fmt.Errorf("this node lacks %s of the control plane (run the upgrade on a control-plane node): %s", what, strings.Join(missing, ", ")))
	}
	return preflight.Result{}
}
