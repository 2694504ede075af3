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
// with a checkpoint it looks, every interval, at whether the checkpoint
// must stand in for the component's DaemonSet Pod.
//
// The API server:
//
//   - The checkpoint is not in the manifest folder, and the API server's
//     health endpoint (its static Pod's probe) has not answered for Grace
//     (for HandOverWait and then Grace after its checkpoint was removed),
//     or did not answer when the loop started (the node has just booted,
//     and without an API server the kubelet runs none of the DaemonSet
//     Pods): the checkpoint is copied into the manifest folder, and the
//     kubelet runs it as a static Pod.
//   - The checkpoint is in the manifest folder, the API server answers, and
//     this node's DaemonSet Pod of the API server has had a container
//     started or ended since the checkpoint was put there: the kubelet
//     knows the Pod again and keeps it, so the checkpoint is removed and
//     the DaemonSet Pod gets the ports, which the checkpoint held, at its
//     next restart. Or the DaemonSet Pod kept the ports (it ran when the
//     checkpoint was put in place, as when etcd's restart kept the API
//     server from answering for a while), and the checkpoint's container
//     has ended since and waits to restart (LostPorts): it is removed too.
//
// The controller manager and the scheduler only work through the API
// server, and while it answers the kubelet runs every DaemonSet Pod bound
// to the node (restarting it after crashes): their checkpoints stand in
// only while the API server answers and the node has no DaemonSet Pod of
// the component to run (its Pod was deleted and no controller manager
// makes a new one, or no scheduler binds it). So:
//
//   - not in the manifest folder, the API server answers, no DaemonSet Pod
//     of the component is bound to the node, and its health endpoint has
//     not answered for Grace: the checkpoint is put in place;
//   - in the manifest folder, the API server answers, and a DaemonSet Pod
//     of the component is bound to the node: the checkpoint is removed (it
//     would only keep the ports from that Pod).
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
	// handedOver holds when the API server's manifest left the manifest
	// folder (removed here, or by Pivot), until it answers again; present
	// whether it was there at the last look.
	handedOver map[string]time.Time
	present    map[string]bool
}

// look is what one Step knows about the node: the checkpointer's loop,
// and this node's DaemonSet Pods, asked at most once.
type look struct {
	l       *CheckpointerLoop
	pods    []corev1.Pod
	podsErr error
	asked   bool
}

func (k *look) nodePods(ctx context.Context) ([]corev1.Pod, error) {
	if !k.asked {
		k.pods, k.podsErr = k.l.Pods(ctx)
		k.asked = true
	}
	return k.pods, k.podsErr
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
	k := &look{l: l}
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
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if comp == staticpod.KubeAPIServer {
			err = l.apiServer(ctx, k, data, active, st, first)
		} else {
			err = l.standIn(ctx, k, comp, data, active, st != nil)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// apiServer acts for the API server's checkpoint, data; st describes the
// manifest at active (nil: none).
func (l *CheckpointerLoop) apiServer(ctx context.Context, k *look, data []byte, active string, st fs.FileInfo, first bool) error {
	comp := staticpod.KubeAPIServer
	if st != nil {
		delete(l.down, comp)
		l.present[comp] = true
		pods, err := k.nodePods(ctx)
		if err != nil {
			return nil
		}
		why := "the DaemonSet Pod of %s runs on this node again: removed its checkpoint from %s"
		switch {
		case Started(pods, comp, st.ModTime()):
		case LostPorts(pods, comp, st.ModTime()):
			why = "the DaemonSet Pod of %s kept its ports, and its checkpoint cannot start: removed the checkpoint from %s"
		default:
			return nil
		}
		if err := os.Remove(active); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the checkpoint of %s: %w", comp, err)
		}
		l.handedOver[comp], l.present[comp] = l.Now(), false
		l.Logf(why, comp, l.ManifestDir)
		return nil
	}
	if l.present[comp] {
		l.handedOver[comp], l.present[comp] = l.Now(), false
	}
	healthy, err := l.healthy(ctx, comp, data)
	if err != nil || healthy {
		delete(l.handedOver, comp)
		return err
	}
	now := l.Now()
	if h, ok := l.handedOver[comp]; ok && now.Sub(h) < HandOverWait {
		return nil
	}
	since := l.downSince(comp, now)
	if !first && now.Sub(since) < l.Grace {
		return nil
	}
	return l.putInPlace(comp, data, active, fmt.Sprintf("%s has not answered since %s", comp, since.Format(time.RFC3339)))
}

// standIn acts for the checkpoint, data, of the controller manager or the
// scheduler; present says whether it is in the manifest folder (at
// active).
func (l *CheckpointerLoop) standIn(ctx context.Context, k *look, comp string, data []byte, active string, present bool) error {
	pods, err := k.nodePods(ctx)
	if err != nil {
		// Without an API server the component has nothing to do, and
		// the kubelet could not start its DaemonSet Pod.
		delete(l.down, comp)
		return nil
	}
	bound := Bound(pods, comp)
	if present {
		delete(l.down, comp)
		if !bound {
			return nil
		}
		if err := os.Remove(active); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the checkpoint of %s: %w", comp, err)
		}
		l.Logf("this node has a DaemonSet Pod of %s again: removed its checkpoint from %s", comp, l.ManifestDir)
		return nil
	}
	if bound {
		delete(l.down, comp)
		return nil
	}
	healthy, err := l.healthy(ctx, comp, data)
	if err != nil || healthy {
		return err
	}
	now := l.Now()
	since := l.downSince(comp, now)
	if now.Sub(since) < l.Grace {
		return nil
	}
	return l.putInPlace(comp, data, active, fmt.Sprintf("%s has not answered since %s and this node has no DaemonSet Pod of it", comp, since.Format(time.RFC3339)))
}

// healthy asks the health endpoint of the component whose checkpoint is
// data; a healthy component is no longer counted as down.
func (l *CheckpointerLoop) healthy(ctx context.Context, comp string, data []byte) (bool, error) {
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return false, fmt.Errorf("reading the checkpoint of %s: %w", comp, err)
	}
	if err := l.Healthy(ctx, pod); err != nil {
		return false, nil
	}
	delete(l.down, comp)
	return true, nil
}

// downSince is since when comp has been seen down, now if from this look.
func (l *CheckpointerLoop) downSince(comp string, now time.Time) time.Time {
	since, seen := l.down[comp]
	if !seen {
		l.down[comp] = now
		since = now
	}
	return since
}

// putInPlace copies comp's checkpoint into the manifest folder.
func (l *CheckpointerLoop) putInPlace(comp string, data []byte, active, why string) error {
	if err := atomicfile.Write(active, data, staticpod.FileMode); err != nil {
		return fmt.Errorf("putting the checkpoint of %s in place: %w", comp, err)
	}
	delete(l.down, comp)
	l.Logf("%s: put its checkpoint into %s", why, l.ManifestDir)
	return nil
}

// MirrorAnnotation marks the mirror Pod the kubelet makes of a static Pod.
const MirrorAnnotation = "kubernetes.io/config.mirror"

// LostPorts reports whether component's checkpoint, in place since since,
// lost the ports to a DaemonSet Pod that ran before it: among pods (this
// node's), the checkpoint's mirror Pod has its container not running after
// it ended at or after since (to the second), while a DaemonSet Pod of
// component, not being deleted, has its container running. As the API
// server answers, the DaemonSet Pod is the one that serves.
func LostPorts(pods []corev1.Pod, component string, since time.Time) bool {
	since = since.Truncate(time.Second)
	crashed, running := false, false
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels["component"] != component || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		cs := p.Status.ContainerStatuses[0]
		_, mirror := p.Annotations[MirrorAnnotation]
		switch {
		case mirror && cs.State.Running == nil:
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && !t.FinishedAt.Time.Before(since) {
					crashed = true
				}
			}
		case !mirror && p.Labels[AppLabel] == DaemonSetName(component) && cs.State.Running != nil:
			running = true
		}
	}
	return crashed && running
}

// Bound reports whether among pods (this node's) a DaemonSet Pod of
// component is one the kubelet runs: not being deleted, not finished.
func Bound(pods []corev1.Pod, component string) bool {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Labels[AppLabel] == DaemonSetName(component) &&
			p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return true
		}
	}
	return false
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

// NodePods lists node's Pods of the self-hosted components: their
// DaemonSet Pods (labelled AppLabel) and the mirror Pods of their static
// Pods (a checkpoint in place, or the static Pod before a pivot).
func NodePods(ctx context.Context, c kubernetes.Interface, node string) ([]corev1.Pod, error) {
	list, err := c.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + node,
		LabelSelector: fmt.Sprintf("component in (%s)", strings.Join(Components(), ",")),
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
