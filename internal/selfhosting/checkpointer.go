package selfhosting

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Defaults of the checkpointer.
const (
	// DefaultInterval is how often the checkpointer looks.
	DefaultInterval = 2 * time.Second
	// DefaultGrace is how long a component may be down before its
	// checkpoint is put in place: longer than the kubelet's first restart
	// delays (10 s, 20 s) of a DaemonSet Pod that crashed once or twice.
	DefaultGrace = 30 * time.Second
	// HandOverWait is how long a component whose checkpoint was just
	// removed may stay down before the checkpoint is put back (then after
	// the grace period): the kubelet's longest restart delay (5 min) and a
	// margin. A DaemonSet Pod that has crashed often waits that long
	// before its next start; putting the checkpoint back sooner would take
	// its ports again each time, and it would never start.
	HandOverWait = 5*time.Minute + 30*time.Second
	// BinaryHashAnnotation carries the SHA-256 of the kubeadm binary the
	// checkpointer runs, so a new binary changes the manifest and the
	// kubelet restarts the Pod.
	BinaryHashAnnotation = "kubeadm.kubernetes.io/self-hosted-checkpointer-binary-sha256"
	// kubeletConf and kubeletPKI are the kubelet's credentials, which the
	// checkpointer uses to read this node's Pods (the node authorizer lets
	// a node read the Pods bound to it).
	kubeletConf = "/etc/kubernetes/kubelet.conf"
	kubeletPKI  = "/var/lib/kubelet/pki"
)

// CheckpointerPodOptions are what the checkpointer's static Pod depends on.
type CheckpointerPodOptions struct {
	// Image is the image whose filesystem the program runs in: the
	// cluster's pause image (the kubeadm binary is static).
	Image string
	// BinarySHA256 is the hex SHA-256 of kubeadmbinary.Path's content.
	BinarySHA256 string
	// KubernetesDir is /etc/kubernetes; ManifestDir the kubelet's static
	// Pod folder in it.
	KubernetesDir, ManifestDir string
}

// CheckpointerPod returns the static Pod that runs the checkpointer
// (kubeadm alpha selfhosting checkpointer) on a self-hosted control-plane
// node, from the kubeadm binary that init or pivot copied to
// kubeadmbinary.Path. It writes into the Kubernetes folder, so it runs as
// root.
func CheckpointerPod(o CheckpointerPodOptions) *corev1.Pod {
	return kubeadmbinary.StaticPod(kubeadmbinary.PodOptions{
		Name:           Checkpointer,
		Tier:           "control-plane",
		Image:          o.Image,
		HashAnnotation: BinaryHashAnnotation,
		BinarySHA256:   o.BinarySHA256,
		Command: []string{
			kubeadmbinary.Path, "alpha", "selfhosting", "checkpointer",
			"--kubeconfig=" + kubeletConf,
			"--manifest-dir=" + o.ManifestDir,
			"--checkpoint-dir=" + filepath.Join(o.KubernetesDir, CheckpointFolder),
		},
		Mounts: []kubeadmbinary.HostMount{
			{Name: "kubernetes", Path: o.KubernetesDir, Type: corev1.HostPathDirectory},
			{Name: "kubelet-pki", Path: kubeletPKI, Type: corev1.HostPathDirectory, ReadOnly: true},
		},
		Priority:          2000001000,
		PriorityClassName: "system-node-critical",
	})
}

// CheckpointerLoop is the checkpointer of one node. For each component
// with a checkpoint it looks, every interval, at two things:
//
//   - The checkpoint is not in the manifest folder, and the component's
//     health endpoint (its static Pod's probe) has not answered for Grace
//     (for HandOverWait and then Grace after its checkpoint was removed),
//     or, for the API server, did not answer when the loop started (the
//     node has just booted, and without an API server the kubelet runs
//     none of the DaemonSet Pods): the checkpoint is copied into the
//     manifest folder, and the kubelet runs it as a static Pod.
//   - The checkpoint is in the manifest folder, the API server answers, and
//     this node's DaemonSet Pod of the component has had a container
//     started or ended since the checkpoint was put there: the kubelet
//     knows the Pod again and keeps it, so the checkpoint is removed and
//     the DaemonSet Pod gets the component's ports, which the checkpoint
//     held, at its next restart.
//
// Components without a checkpoint, and every component once the
// checkpointer's own manifest is gone (Unpivot removes it first), are left
// alone.
type CheckpointerLoop struct {
	ManifestDir, CheckpointDir string
	// Pods lists this node's DaemonSet Pods of the self-hosted
	// components; an error means the API server could not be asked.
	Pods func(ctx context.Context) ([]corev1.Pod, error)
	// Healthy asks the health endpoint of a component's Pod.
	Healthy func(ctx context.Context, pod *corev1.Pod) error
	Now     func() time.Time
	Grace   time.Duration
	Logf    func(format string, args ...any)

	down map[string]time.Time // since when each component has been seen down
	// handedOver holds when each component's manifest left the manifest
	// folder (removed here, or by Pivot), until the component answers
	// again; present which components had one at the last look.
	handedOver map[string]time.Time
	present    map[string]bool
}

// Step looks once and acts (see CheckpointerLoop). Every error is about
// one component and is reported after the others were looked at.
func (l *CheckpointerLoop) Step(ctx context.Context) error {
	if _, err := os.Stat(staticpod.ManifestPath(l.ManifestDir, Checkpointer)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	first := l.down == nil
	if first {
		l.down, l.handedOver, l.present = map[string]time.Time{}, map[string]time.Time{}, map[string]bool{}
	}
	var pods []corev1.Pod
	var podsErr error
	asked := false
	var errs []error
	for _, comp := range Components() {
		data, err := boundedread.ReadFile(CheckpointPath(l.CheckpointDir, comp), boundedread.MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			delete(l.down, comp)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		active := staticpod.ManifestPath(l.ManifestDir, comp)
		st, err := os.Stat(active)
		switch {
		case err == nil:
			delete(l.down, comp)
			l.present[comp] = true
			if !asked {
				pods, podsErr = l.Pods(ctx)
				asked = true
			}
			if podsErr != nil || !Started(pods, comp, st.ModTime()) {
				continue
			}
			if err := os.Remove(active); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing the checkpoint of %s: %w", comp, err))
				continue
			}
			l.handedOver[comp], l.present[comp] = l.Now(), false
			l.Logf("the DaemonSet Pod of %s runs on this node again: removed its checkpoint from %s", comp, l.ManifestDir)
		case errors.Is(err, fs.ErrNotExist):
			if l.present[comp] {
				l.handedOver[comp], l.present[comp] = l.Now(), false
			}
			pod := &corev1.Pod{}
			if err := yaml.Unmarshal(data, pod); err != nil {
				errs = append(errs, fmt.Errorf("reading the checkpoint of %s: %w", comp, err))
				continue
			}
			if err := l.Healthy(ctx, pod); err == nil {
				delete(l.down, comp)
				delete(l.handedOver, comp)
				continue
			}
			now := l.Now()
			if h, ok := l.handedOver[comp]; ok && now.Sub(h) < HandOverWait {
				continue
			}
			since, seen := l.down[comp]
			if !seen {
				l.down[comp] = now
				since = now
			}
			if !(first && comp == staticpod.KubeAPIServer) && now.Sub(since) < l.Grace {
				continue
			}
			if err := atomicfile.Write(active, data, staticpod.FileMode); err != nil {
				errs = append(errs, fmt.Errorf("putting the checkpoint of %s in place: %w", comp, err))
				continue
			}
			delete(l.down, comp)
			l.Logf("%s has not answered since %s: put its checkpoint into %s", comp, since.Format(time.RFC3339), l.ManifestDir)
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Started reports whether a DaemonSet Pod of component among pods (not
// being deleted) had a container started or ended at or after since (to
// the second, as the API keeps times).
func Started(pods []corev1.Pod, component string, since time.Time) bool {
	since = since.Truncate(time.Second)
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels[AppLabel] != DaemonSetName(component) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			var times []metav1.Time
			for _, s := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
				if s.Running != nil {
					times = append(times, s.Running.StartedAt)
				}
				if s.Terminated != nil {
					times = append(times, s.Terminated.StartedAt, s.Terminated.FinishedAt)
				}
			}
			for _, t := range times {
				if !t.IsZero() && !t.Time.Before(since) {
					return true
				}
			}
		}
	}
	return false
}

// CheckpointerOptions configure RunCheckpointer.
type CheckpointerOptions struct {
	Kubeconfig                 string
	ManifestDir, CheckpointDir string
	Interval, Grace            time.Duration
	Logf                       func(format string, args ...any)
}

// RunCheckpointer runs the checkpointer of this node until ctx ends,
// asking the API server with the kubelet's credentials.
func RunCheckpointer(ctx context.Context, o CheckpointerOptions) error {
	node, err := NodeName(o.Kubeconfig)
	if err != nil {
		return err
	}
	client, _, err := apiclient.FromKubeconfig(o.Kubeconfig, 5*time.Second)
	if err != nil {
		return err
	}
	probe := staticpod.ProbeClient()
	l := &CheckpointerLoop{
		ManifestDir:   o.ManifestDir,
		CheckpointDir: o.CheckpointDir,
		Pods:          func(ctx context.Context) ([]corev1.Pod, error) { return NodePods(ctx, client, node) },
		Healthy: func(ctx context.Context, pod *corev1.Pod) error {
			u, err := staticpod.HealthURL(pod)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			return staticpod.Probe(ctx, probe, u)
		},
		Now:   time.Now,
		Grace: o.Grace,
		Logf:  o.Logf,
	}
	o.Logf("watching the self-hosted control plane of node %q (checkpoints in %s)", node, o.CheckpointDir)
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		if err := l.Step(ctx); err != nil {
			o.Logf("%v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NodePods lists node's DaemonSet Pods of the self-hosted components.
func NodePods(ctx context.Context, c kubernetes.Interface, node string) ([]corev1.Pod, error) {
	names := make([]string, 0, 3)
	for _, comp := range Components() {
		names = append(names, DaemonSetName(comp))
	}
	list, err := c.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + node,
		LabelSelector: fmt.Sprintf("%s in (%s)", AppLabel, strings.Join(names, ",")),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// NodeName is the name of the node whose kubelet kubeconfig is at path:
// the common name of its client certificate is system:node:<name>.
func NodeName(path string) (string, error) {
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	cfg, err := kubeconfig.RESTConfig(kc, "")
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		if data, err = boundedread.ReadFile(cfg.CertFile, boundedread.MaxFile); err != nil {
			return "", fmt.Errorf("reading the client certificate of %s: %w", path, err)
		}
	}
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return "", fmt.Errorf("parsing the client certificate of %s: %w", path, err)
		}
		if name, ok := strings.CutPrefix(cert.Subject.CommonName, "system:node:"); ok && name != "" {
			return name, nil
		}
		return "", fmt.Errorf("the client certificate of %s is %q's, not a node's", path, cert.Subject.CommonName)
	}
	return "", fmt.Errorf("%s has no client certificate", path)
}

// sameFile reports whether path holds data.
func sameFile(path string, data []byte) bool {
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	return err == nil && bytes.Equal(old, data)
}
