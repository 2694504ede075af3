package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Labels the kubelet puts on the sandboxes and containers it runs.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
)

// crashLimit is how many exits of a new container mean it will not come up:
// the kubelet restarts it with a growing back-off, so waiting longer only
// delays the rollback.
const crashLimit = 3

// ManifestMode is the mode of the static Pod manifests (and their backups).
const ManifestMode = 0o600

// Runtime is what the static Pod upgrade asks of the container runtime: it
// watches the kubelet replace a component's Pod.
type Runtime interface {
	ListPodSandboxes(ctx context.Context, labels map[string]string) ([]cri.PodSandbox, error)
	ListContainers(ctx context.Context, filter cri.ContainerFilter) ([]cri.Container, error)
}

// Manifest is the new static Pod manifest of one component.
type Manifest struct {
	Component string
	Data      []byte
	// Before runs just before the manifest is written (certificate
	// renewal); it is not run for a manifest that does not change.
	Before func() error
}

// StaticPods replaces the static Pod manifests of the control plane on one
// node, one component at a time: each old manifest is copied to BackupDir,
// the new one written, and the kubelet watched until it runs a new Pod
// for it that answers its health endpoint. When one component does not
// come up, every manifest changed so far is restored byte for byte (in
// reverse order) and the restored components are waited for.
type StaticPods struct {
	ManifestDir string
	BackupDir   string
	NodeName    string
	// Timeout bounds the wait for each component (timeouts.upgradeManifests).
	Timeout time.Duration
	Runtime Runtime
	// Healthy asks a component's health endpoint (staticpod.HealthURL);
	// nil: staticpod.Probe with staticpod.ProbeClient, as the kubelet's
	// probes ask it.
	Healthy func(ctx context.Context, url string) error
	// Interval separates two looks at the runtime (0: 500ms).
	Interval time.Duration
	// EtcdData, when set, is the copy of etcd's data taken before its
	// manifest changed: a rollback that restores etcd's manifest puts it
	// back when EtcdData.RestoreDue says so, after the kubelet stopped
	// etcd.
	EtcdData *EtcdData
	// Leaders, when set, waits at the end of a rollback that put etcd's
	// data back or restored the controller manager's or the scheduler's
	// manifest until each leads again (see Leaders). Upstream's rollback
	// does not wait; its next apply can fail its CreateJob check.
	Leaders *leaderlease.Waiter
	Out     io.Writer

	changed     []changed
	probeClient *http.Client
}

type changed struct {
	component string
	old       []byte
}

// ComponentError is the error of a component that did not come up; the
// manifests were rolled back.
type ComponentError struct {
	Component string
	Err       error
	// RollbackErr is set when restoring the old manifests failed too.
	RollbackErr error
	// Units is true for the units of a control plane of host processes.
	Units bool
}

func (e *ComponentError) Error() string {
	msg := fmt.Sprintf("upgrading %s: %v", e.Component, e.Err)
	what := "manifests"
	if e.Units {
		what = "units"
	}
	if e.RollbackErr != nil {
		return msg + fmt.Sprintf("; restoring the previous %s failed too: %v", what, e.RollbackErr)
	}
	return msg + "; the previous " + what + " were restored"
}

func (e *ComponentError) Unwrap() error { return e.Err }

// Apply upgrades the components of manifests in their order. It returns a
// *ComponentError when a component did not come up (after the rollback).
func (s *StaticPods) Apply(ctx context.Context, manifests []Manifest) error {
	for _, m := range manifests {
		if err := s.apply(ctx, m); err != nil {
			ce := &ComponentError{Component: m.Component, Err: err}
			ce.RollbackErr = s.Rollback(ctx, m.Component)
			return ce
		}
	}
	return nil
}

// Changed lists the components whose manifest Apply replaced.
func (s *StaticPods) Changed() []string {
	var out []string
	for _, c := range s.changed {
		out = append(out, c.component)
	}
	return out
}

func (s *StaticPods) apply(ctx context.Context, m Manifest) error {
	path := staticpod.ManifestPath(s.ManifestDir, m.Component)
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return fmt.Errorf("reading the current manifest: %w", err)
	}
	if bytes.Equal(old, m.Data) {
		fmt.Fprintf(s.Out, "[upgrade/staticpods] The manifest of %q is already up to date; its Pod is left running\n", m.Component)
		return nil
	}
	fmt.Fprintf(s.Out, "[upgrade/staticpods] Preparing the upgrade of %q\n", m.Component)
	if err := os.MkdirAll(s.BackupDir, 0o700); err != nil {
		return fmt.Errorf("making the backup folder: %w", err)
	}
	backup := staticpod.ManifestPath(s.BackupDir, m.Component)
	if err := atomicfile.Write(backup, old, ManifestMode); err != nil {
		return fmt.Errorf("backing up the current manifest: %w", err)
	}
	if m.Before != nil {
		if err := m.Before(); err != nil {
			return err
		}
	}
	since := time.Now()
	fmt.Fprintf(s.Out, "[upgrade/staticpods] Writing the new manifest to %q; the previous one is kept in %q\n", path, backup)
	s.changed = append(s.changed, changed{component: m.Component, old: old})
	if err := atomicfile.Write(path, m.Data, ManifestMode); err != nil {
		return fmt.Errorf("writing the new manifest: %w", err)
	}
	fmt.Fprintf(s.Out, "[upgrade/staticpods] Waiting up to %v for the kubelet to restart %q and for it to answer as healthy\n", s.Timeout, m.Component)
	start := time.Now()
	if err := s.waitReplaced(ctx, m.Component, since, m.Data); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "[upgrade/staticpods] %q upgraded and healthy after %v\n", m.Component, time.Since(start).Round(100*time.Millisecond))
	if m.Component == staticpod.Etcd {
		return s.waitAPIServerServes(ctx)
	}
	return nil
}

// waitAPIServerServes waits, after etcd was replaced, until the API server
// of this node (the one its manifest on disk describes) is ready again:
// it had lost its etcd. Taking it down next, for its own upgrade, before
// it served again would join the two outages into one long enough for the
// kubelets that reach the cluster through it to miss their lease renewals
// and their nodes to be marked NotReady, with their Pods dropped from
// every Service. A node without an API server manifest goes on at once.
func (s *StaticPods) waitAPIServerServes(ctx context.Context) error {
	pod, err := staticpod.ReadManifest(staticpod.ManifestPath(s.ManifestDir, staticpod.KubeAPIServer))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	url, err := staticpod.HealthURL(pod)
	if err != nil {
		return err
	}
	return waitServes(ctx, s.Out, "staticpods", url, s.Timeout, pollInterval(s.Interval), s.healthy)
}

// waitServes waits up to timeout, looking every interval, until healthy
// says this node's API server at url serves again after etcd's
// replacement, and says so on out under "[upgrade/<prefix>]".
func waitServes(ctx context.Context, out io.Writer, prefix, url string, timeout, interval time.Duration, healthy func(context.Context, string) error) error {
	fmt.Fprintf(out, "[upgrade/%s] Waiting up to %v for this node's API server to serve again with the new etcd\n", prefix, timeout)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := healthy(ctx, url)
		if err == nil {
			fmt.Fprintf(out, "[upgrade/%s] This node's API server serves again after %v\n", prefix, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("this node's API server did not serve again with the new etcd within %v: %s: %w", timeout, url, err)
		case <-time.After(interval):
		}
	}
}

func (s *StaticPods) interval() time.Duration { return pollInterval(s.Interval) }

// pollInterval is d, or 500ms when d is not set.
func pollInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return 500 * time.Millisecond
	}
	return d
}

// Rollback restores every manifest Apply replaced, newest first, then
// waits for those components to be healthy again. failed names the
// component whose own upgrade failed. etcd's data is put back when
// EtcdData.RestoreDue says so: its manifest is removed first and the
// kubelet's stop of etcd waited for, then the data copied back and the
// previous manifest written.
func (s *StaticPods) Rollback(ctx context.Context, failed string) error {
	var errs []error
	type restored struct {
		component string
		since     time.Time
		data      []byte
	}
	var waits []restored
	dataRestored := false
	for i := len(s.changed) - 1; i >= 0; i-- {
		c := s.changed[i]
		path := staticpod.ManifestPath(s.ManifestDir, c.component)
		if cur, err := boundedread.ReadFile(path, boundedread.MaxFile); err == nil && bytes.Equal(cur, c.old) {
			// The new manifest never reached the disk: nothing to restore
			// and no Pod to wait for.
			continue
		}
		restore, err := s.EtcdData.dueFor(c.component, failed)
		if err != nil {
			errs = append(errs, err)
		}
		if restore {
			if err := s.stopPod(ctx, c.component); err != nil {
				// Copying data under a running etcd would be worse
				// than keeping the new data.
				errs = append(errs, err)
				restore = false
			} else if err := s.EtcdData.Restore(); err != nil {
				errs = append(errs, err)
			} else {
				dataRestored = true
			}
		}
		since := time.Now()
		fmt.Fprintf(s.Out, "[upgrade/staticpods] Restoring the previous manifest of %q\n", c.component)
		if err := atomicfile.Write(path, c.old, ManifestMode); err != nil {
			errs = append(errs, fmt.Errorf("restoring the manifest of %s: %w", c.component, err))
			continue
		}
		waits = append(waits, restored{c.component, since, c.old})
	}
	for _, w := range waits {
		if err := s.waitReplaced(ctx, w.component, w.since, w.data); err != nil {
			errs = append(errs, fmt.Errorf("%s did not come back after its manifest was restored: %w", w.component, err))
			continue
		}
		fmt.Fprintf(s.Out, "[upgrade/staticpods] %q is running its previous manifest again\n", w.component)
	}
	if dataRestored || slices.ContainsFunc(waits, func(w restored) bool { return leaderlease.Elects(w.component) }) {
		if err := s.waitLeaders(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.changed = nil
	return errors.Join(errs...)
}

// waitLeaders waits until the controller manager and the scheduler of
// this node (as their manifests name their Leases) lead again.
func (s *StaticPods) waitLeaders(ctx context.Context) error {
	if s.Leaders == nil {
		return nil
	}
	var installed []string
	for _, c := range []string{staticpod.KubeControllerManager, staticpod.KubeScheduler} {
		if _, err := os.Stat(staticpod.ManifestPath(s.ManifestDir, c)); err == nil {
			installed = append(installed, c)
		}
	}
	return s.Leaders.WaitNode(ctx, installed, func(c string) ([]string, error) {
		pod, err := staticpod.ReadManifest(staticpod.ManifestPath(s.ManifestDir, c))
		if err != nil {
			return nil, err
		}
		return staticpod.CommandLine(pod), nil
	})
}

// stopPod removes component's manifest, so that the kubelet stops its
// Pod, and waits until the runtime runs none of its containers. The
// manifest is the new one, which Rollback replaces by the previous one
// next (kept in BackupDir too).
func (s *StaticPods) stopPod(ctx context.Context, component string) error {
	path := staticpod.ManifestPath(s.ManifestDir, component)
	fmt.Fprintf(s.Out, "[upgrade/staticpods] Removing the manifest of %q and waiting up to %v for the kubelet to stop it; the previous manifest is in %q\n",
		component, s.Timeout, staticpod.ManifestPath(s.BackupDir, component))
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the manifest of %s to stop it: %w", component, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	for {
		running, err := s.podRunning(ctx, component)
		if err == nil && !running {
			return nil
		}
		if err == nil {
			err = errors.New("its Pod still runs")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the kubelet did not stop %s within %v of the removal of its manifest: %w", component, s.Timeout, err)
		case <-time.After(s.interval()):
		}
	}
}

// podRunning reports whether the runtime runs a sandbox or a container
// of component's static Pod: a container that crash-loops is between two
// starts while its sandbox stays ready.
func (s *StaticPods) podRunning(ctx context.Context, component string) (bool, error) {
	boxes, err := s.Runtime.ListPodSandboxes(ctx, map[string]string{
		labelPodName: s.podName(component), labelPodNamespace: metav1.NamespaceSystem,
	})
	if err != nil {
		return false, fmt.Errorf("listing the Pods of %s in the container runtime: %w", component, err)
	}
	for _, b := range boxes {
		if b.Ready {
			return true, nil
		}
		cs, err := s.Runtime.ListContainers(ctx, cri.ContainerFilter{PodSandboxID: b.ID, Labels: map[string]string{labelContainerName: component}})
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if c.State == cri.ContainerRunning {
				return true, nil
			}
		}
	}
	return false, nil
}

// podName is the name of a component's static Pod on this node.
func (s *StaticPods) podName(component string) string {
	return component + "-" + s.NodeName
}

// waitReplaced waits until the runtime runs component in a sandbox made
// after since (the kubelet makes a new one for a changed manifest), and its
// health endpoint (from manifest) answers. A new container that keeps
// exiting ends the wait early.
func (s *StaticPods) waitReplaced(ctx context.Context, component string, since time.Time, manifest []byte) error {
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(manifest, pod); err != nil {
		return fmt.Errorf("reading the manifest: %w", err)
	}
	url, err := staticpod.HealthURL(pod)
	if err != nil {
		return err
	}
	interval := s.interval()
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	var last error // why the latest try failed; every try sets it
	for {
		running, err := s.newContainerRunning(ctx, component, since)
		switch {
		case err != nil:
			last = err
			var crash *crashError
			if errors.As(err, &crash) {
				return err
			}
		case !running:
			last = errors.New("the kubelet has not started the new Pod's container yet")
		default:
			if err := s.healthy(ctx, url); err != nil {
				last = fmt.Errorf("%s: %w", url, err)
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not up after %v: %w", s.Timeout, last)
		case <-time.After(interval):
		}
	}
}

// crashError reports a new container that keeps exiting.
type crashError struct {
	component string
	exits     int
	last      string // ID of the latest exited container
}

func (e *crashError) Error() string {
	return fmt.Sprintf("the new %s container exited %d times; read its logs with 'crictl logs %s'", e.component, e.exits, e.last)
}

// newContainerRunning reports whether a sandbox made after since runs the
// component's container; a *crashError when its containers keep exiting.
func (s *StaticPods) newContainerRunning(ctx context.Context, component string, since time.Time) (bool, error) {
	boxes, err := s.Runtime.ListPodSandboxes(ctx, map[string]string{
		labelPodName: s.podName(component), labelPodNamespace: metav1.NamespaceSystem,
	})
	if err != nil {
		return false, fmt.Errorf("listing the Pods of %s in the container runtime: %w", component, err)
	}
	for _, b := range boxes {
		if b.CreatedAt.Before(since) {
			continue
		}
		cs, err := s.Runtime.ListContainers(ctx, cri.ContainerFilter{PodSandboxID: b.ID, Labels: map[string]string{labelContainerName: component}})
		if err != nil {
			return false, err
		}
		// The kubelet keeps few dead containers; their attempt numbers
		// count the restarts.
		exits, last := 0, ""
		for _, c := range cs {
			n := int(c.Attempt)
			switch c.State {
			case cri.ContainerRunning:
				if b.Ready {
					return true, nil
				}
			case cri.ContainerExited:
				n++
				if n >= exits {
					last = c.ID
				}
			}
			exits = max(exits, n)
		}
		if exits >= crashLimit {
			return false, &crashError{component: component, exits: exits, last: last}
		}
	}
	return false, nil
}

// probeTimeout bounds one request to a component's health endpoint.
const probeTimeout = 5 * time.Second

func (s *StaticPods) healthy(ctx context.Context, url string) error {
	if s.Healthy != nil {
		return s.Healthy(ctx, url)
	}
	if s.probeClient == nil {
		s.probeClient = staticpod.ProbeClient()
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return staticpod.Probe(ctx, s.probeClient, url)
}

// BackupDirName is the dated folder name upstream kubeadm uses for a
// backup of kind ("manifests", "etcd") under /etc/kubernetes/tmp.
func BackupDirName(tmpDir, kind string, now time.Time) string {
	return filepath.Join(tmpDir, "kubeadm-backup-"+kind+"-"+now.Format("2006-01-02-15-04-05"))
}
