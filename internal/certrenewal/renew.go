package certrenewal

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// DefaultWindow is the default renewal window: 90 days, as k3s renews.
const DefaultWindow = 90 * 24 * time.Hour

// Component is a control-plane component a renewed file may belong to.
type Component struct {
	Name string
	// Reloads: it reads its certificate files again by itself (on each
	// new connection, or when they change), so it is not restarted.
	Reloads bool
	// Serves is the certificate it serves, whose renewal it must be seen
	// serving.
	Serves string
}

// Components lists the control-plane components in the order a run
// handles them: etcd first (the API server depends on it), the
// API server, then its clients.
func Components() []Component {
	return []Component{
		{Name: "etcd", Reloads: true, Serves: "etcd-server"},
		{Name: "kube-apiserver", Reloads: true, Serves: "apiserver"},
		{Name: "kube-controller-manager"},
		{Name: "kube-scheduler"},
	}
}

// UsedBy names the component that reads the certificate (a name of
// pki.CertTable) or kubeconfig file (a name of pki.KubeconfigTable): ""
// for those no component reads (admin.conf, super-admin.conf,
// etcd-healthcheck-client).
func UsedBy(name string) string {
	switch name {
	case "apiserver", "apiserver-kubelet-client", "front-proxy-client", "apiserver-etcd-client":
		return "kube-apiserver"
	case "etcd-server", "etcd-peer":
		return "etcd"
	case "controller-manager.conf":
		return "kube-controller-manager"
	case "scheduler.conf":
		return "kube-scheduler"
	}
	return ""
}

// ReadBy names, for a report, what reads the file: UsedBy's component,
// or for the CISHardening approver's kubeconfig that approver's static
// Pod, which reads a renewed file again by itself (UsedBy leaves it out:
// nothing restarts for it).
func ReadBy(name string) string {
	if name == cis.ApproverKubeconfigFile {
		return staticpod.KubeletServingApprover
	}
	return UsedBy(name)
}

// Node makes the components of this node use renewed files.
type Node interface {
	// Restart restarts component and waits until it is healthy.
	Restart(ctx context.Context, component string) error
	// Reloaded waits until component, which reads its files by itself,
	// is healthy and, when serves is set, serves that certificate.
	Reloaded(ctx context.Context, component string, serves *x509.Certificate) error
}

// Renewer renews what expires soon on one control-plane node. Its fields
// are set once; Run may be called again (a second run renews nothing).
type Renewer struct {
	Cfg           *kubeadm.ClusterConfiguration
	CertDir       string
	KubeconfigDir string
	// BackupDir receives the previous files (created when needed).
	BackupDir string
	// StatusPath is the status file ("" for none).
	StatusPath string
	Window     time.Duration
	// Due, when set, picks the certificates to renew in place of Window
	// (a CA rotation renews every certificate its new CA has not signed);
	// DueWhat says in the log what it picks ("not signed by the new CA").
	Due     func(c pki.ExpirationInfo) (bool, error)
	DueWhat string
	Now     func() time.Time
	NewKey  pki.KeyGenerator
	// Node restarts and watches the components; nil leaves them alone
	// (they are then reported pending).
	Node Node
	// Out receives the run's log lines, each starting "[certs-renewal] ".
	Out io.Writer
}

// ExternalCAError reports due certificates whose CA key is not on the
// node; nothing was renewed.
type ExternalCAError struct {
	Due []CertReport
}

func (e *ExternalCAError) Error() string {
	var names []string
	for _, c := range e.Due {
		names = append(names, fmt.Sprintf("%s (expires %s)", c.Name, c.ExpirationDate.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("%d certificates expire soon but the key of their CA is not on this node (external CA), so nothing was renewed; renew them with that CA: %s",
		len(e.Due), strings.Join(names, ", "))
}

// ComponentError reports a component that did not come back on its
// renewed files.
type ComponentError struct {
	Component string
	Err       error
	// RollbackErr is set when bringing it back on its previous files
	// failed too.
	RollbackErr error
}

func (e *ComponentError) Error() string {
	msg := fmt.Sprintf("%s did not come back on its renewed certificates: %v", e.Component, e.Err)
	if e.RollbackErr != nil {
		return msg + fmt.Sprintf("; bringing it back on its previous ones failed too: %v", e.RollbackErr)
	}
	return msg + "; its previous certificates were restored and it runs on them again"
}

func (e *ComponentError) Unwrap() error { return e.Err }

func (r *Renewer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Renewer) logf(format string, args ...any) {
	fmt.Fprintf(r.Out, "[certs-renewal] "+format+"\n", args...)
}

// due is one certificate to renew and the files it is in.
type due struct {
	info    pki.ExpirationInfo
	cert    *pki.Cert // a certificate file, or nil for a kubeconfig
	files   []string  // its files
	backups []string  // their copies, once made
	renewed *x509.Certificate
}

// Run renews what expires within the window and makes the components use
// it. It returns the report (also written to the status file) and an
// *ExternalCAError, a *ComponentError or another error when the run
// failed.
func (r *Renewer) Run(ctx context.Context) (*Report, error) {
	rep := newReport()
	start := r.now()
	rep.Time = metav1.NewTime(start.UTC())
	rep.Window = metav1.Duration{Duration: r.Window}
	var err error
	if r.StatusPath != "" {
		var unlock func()
		unlock, err = lockRun(r.StatusPath + ".lock")
		if err != nil {
			// Another run owns the status file: leave it alone.
			return rep, err
		}
		defer unlock()
	}
	err = r.run(ctx, rep, start)
	if err != nil {
		rep.Error = err.Error()
		r.logf("FAILED: %v", err)
	}
	fin := metav1.NewTime(r.now().UTC())
	rep.Finished = &fin
	if r.StatusPath != "" {
		if serr := writeStatus(r.StatusPath, rep); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return rep, err
}

func (r *Renewer) run(ctx context.Context, rep *Report, now time.Time) error {
	var pending []string
	if r.StatusPath != "" {
		prev, err := ReadStatus(r.StatusPath)
		if err != nil {
			return err
		}
		if prev != nil && len(prev.Pending) > 0 {
			r.logf("An earlier run left %s to restart", strings.Join(prev.Pending, ", "))
			pending = prev.Pending
		}
	}
	certs, _, err := pki.CheckExpiration(r.Cfg, r.CertDir, r.KubeconfigDir)
	if err != nil {
		return fmt.Errorf("reading the certificates: %w", err)
	}
	var dues []*due
	var external []CertReport
	for _, c := range certs {
		if c.Missing {
			continue
		}
		cr := CertReport{Name: c.Name, ExpirationDate: metav1.NewTime(c.NotAfter.UTC()), UsedBy: ReadBy(c.Name)}
		isDue := c.NotAfter.Sub(now) < r.Window
		if r.Due != nil {
			if isDue, err = r.Due(c); err != nil {
				return err
			}
		}
		if !isDue {
			rep.NotDue = append(rep.NotDue, cr)
			continue
		}
		if c.ExternallyManaged {
			external = append(external, cr)
			continue
		}
		d := &due{info: c}
		if pki.IsKubeconfig(c.Name) {
			d.files = []string{pki.KubeconfigPath(r.KubeconfigDir, c.Name)}
		} else if cert, ok := pki.LookupCert(c.Name); ok {
			d.cert = &cert
			d.files = []string{pki.CertPath(r.CertDir, cert.BaseName), pki.KeyPath(r.CertDir, cert.BaseName)}
		} else {
			return fmt.Errorf("unknown certificate %q", c.Name)
		}
		dues = append(dues, d)
	}
	if len(external) > 0 {
		rep.ExternallyManaged = external
		rep.Pending = pending
		return &ExternalCAError{Due: external}
	}
	if len(dues) == 0 && r.Due != nil {
		r.logf("No certificate %s: none renewed", r.DueWhat)
	} else if len(dues) == 0 {
		r.logf("Nothing expires within %v: no certificate renewed", r.Window)
	}

	// Record which components will need restarting before anything
	// changes, so that a run killed half-way is finished by the next.
	need := map[string]bool{}
	for _, p := range pending {
		need[p] = true
	}
	for _, d := range dues {
		if c := UsedBy(d.info.Name); c != "" {
			need[c] = true
		}
	}
	var order []Component
	for _, c := range Components() {
		if need[c.Name] {
			order = append(order, c)
			rep.Pending = append(rep.Pending, c.Name)
		}
	}
	if len(dues) > 0 {
		if r.StatusPath != "" {
			if err := writeStatus(r.StatusPath, rep); err != nil {
				return err
			}
		}
		if err := r.backUp(dues); err != nil {
			return err
		}
		rep.BackupDir = r.BackupDir
		if err := r.renew(ctx, rep, dues); err != nil {
			if rerr := restore(dues); rerr != nil {
				return fmt.Errorf("%w; restoring the previous files failed too: %v", err, rerr)
			}
			rep.Renewed = nil
			rep.Pending = pending
			return fmt.Errorf("%w; the previous files were restored", err)
		}
	}
	if r.Node == nil {
		if len(order) > 0 {
			r.logf("Not restarting %s: restart them so that they use the renewed certificates", strings.Join(rep.Pending, ", "))
		}
		return nil
	}
	for i, c := range order {
		if err := r.apply(ctx, rep, c, dues); err != nil {
			// The components after c get their previous files back and
			// need nothing; those an earlier run left still do.
			rep.Pending = nil
			for _, l := range order[i+1:] {
				for _, p := range pending {
					if p == l.Name {
						rep.Pending = append(rep.Pending, p)
					}
				}
			}
			return r.rollBack(ctx, rep, order[i:], dues, err)
		}
		rep.Pending = rep.Pending[1:]
		if len(rep.Pending) == 0 {
			rep.Pending = nil
		}
		if r.StatusPath != "" {
			if err := writeStatus(r.StatusPath, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// backUp copies the files of dues into BackupDir, keeping their paths
// below the certificate and kubeconfig folders.
func (r *Renewer) backUp(dues []*due) error {
	if err := os.MkdirAll(r.BackupDir, 0o700); err != nil {
		return fmt.Errorf("making the backup folder: %w", err)
	}
	r.logf("Backing up the certificates to renew to %q", r.BackupDir)
	for _, d := range dues {
		for _, f := range d.files {
			rel, err := filepath.Rel(r.KubeconfigDir, f)
			if d.cert != nil {
				rel, err = filepath.Rel(r.CertDir, f)
				rel = filepath.Join("pki", rel)
			}
			if err != nil {
				return err
			}
			data, err := boundedread.ReadFile(f, boundedread.MaxFile)
			if err != nil {
				return fmt.Errorf("backing up %s: %w", f, err)
			}
			b := filepath.Join(r.BackupDir, rel)
			if err := os.MkdirAll(filepath.Dir(b), 0o700); err != nil {
				return fmt.Errorf("backing up %s: %w", f, err)
			}
			if err := atomicfile.Write(b, data, pki.KeyMode); err != nil {
				return fmt.Errorf("backing up %s: %w", f, err)
			}
			d.backups = append(d.backups, b)
		}
	}
	return nil
}

// renew renews every due certificate.
func (r *Renewer) renew(ctx context.Context, rep *Report, dues []*due) error {
	var names []string
	for _, d := range dues {
		names = append(names, d.info.Name)
	}
	pool := pki.NewKeyPool(ctx, r.NewKey, r.Cfg.KeyAlgorithm(), names, 2)
	for _, d := range dues {
		opts := pki.Options{Now: r.Now, NewKey: pool.Generator(d.info.Name)}
		var err error
		if d.cert != nil {
			d.renewed, err = pki.RenewCert(r.Cfg, r.CertDir, *d.cert, opts)
		} else {
			d.renewed, err = pki.RenewKubeconfigCert(r.Cfg, d.files[0], r.CertDir, opts)
		}
		if err != nil {
			return fmt.Errorf("renewing %s: %w", d.info.Name, err)
		}
		na := metav1.NewTime(d.renewed.NotAfter.UTC())
		rep.Renewed = append(rep.Renewed, CertReport{Name: d.info.Name, ExpirationDate: metav1.NewTime(d.info.NotAfter.UTC()), NewExpirationDate: &na, UsedBy: ReadBy(d.info.Name)})
		r.logf("Renewed %s: it expired %s, now %s", d.info.Name, d.info.NotAfter.UTC().Format(time.RFC3339), d.renewed.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// restore writes the backed-up files of dues back.
func restore(dues []*due) error {
	var errs []error
	for _, d := range dues {
		for i, b := range d.backups {
			data, err := boundedread.ReadFile(b, boundedread.MaxFile)
			if err == nil {
				mode := pki.KeyMode
				if strings.HasSuffix(d.files[i], ".crt") {
					mode = pki.CertMode
				}
				// The owner too: etcd's user reads its files under the
				// CISHardening profile.
				err = atomicfile.WriteLike(d.files[i], data, d.files[i], mode)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", d.files[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// served returns the renewed certificate c serves, or nil.
func served(c Component, dues []*due) *x509.Certificate {
	for _, d := range dues {
		if d.info.Name == c.Serves && d.renewed != nil {
			return d.renewed
		}
	}
	return nil
}

// apply makes c use its renewed files and reports it.
func (r *Renewer) apply(ctx context.Context, rep *Report, c Component, dues []*due) error {
	cr := ComponentReport{Name: c.Name, Action: ActionRestarted, Result: ResultHealthy}
	var err error
	if c.Reloads {
		cr.Action = ActionReloaded
		r.logf("Waiting for %s to load its renewed certificates by itself and be healthy", c.Name)
		err = r.Node.Reloaded(ctx, c.Name, served(c, dues))
	} else {
		r.logf("Restarting %s and waiting for it to be healthy", c.Name)
		err = r.Node.Restart(ctx, c.Name)
	}
	if err != nil {
		cr.Result, cr.Error = ResultFailed, err.Error()
		rep.Components = append(rep.Components, cr)
		return err
	}
	r.logf("%s is healthy on its renewed certificates", c.Name)
	rep.Components = append(rep.Components, cr)
	return nil
}

// rollBack puts back the previous files of the failed component and of
// those not handled yet (left[0] failed), so that none runs on files it
// has not been seen to work with, and brings the failed one back on them.
func (r *Renewer) rollBack(ctx context.Context, rep *Report, left []Component, dues []*due, cause error) error {
	failed := left[0]
	back := map[string]bool{}
	for _, c := range left {
		back[c.Name] = true
	}
	var restoring []*due
	kept := rep.Renewed[:0]
	for _, d := range dues {
		if back[UsedBy(d.info.Name)] {
			restoring = append(restoring, d)
			continue
		}
		for _, cr := range rep.Renewed {
			if cr.Name == d.info.Name {
				kept = append(kept, cr)
			}
		}
	}
	rep.Renewed = kept
	ce := &ComponentError{Component: failed.Name, Err: cause}
	r.logf("%s did not come back: restoring the previous certificates of %s", failed.Name, names(left))
	if err := restore(restoring); err != nil {
		ce.RollbackErr = err
		return ce
	}
	var err error
	if failed.Reloads {
		var old *x509.Certificate
		for _, d := range restoring {
			if d.info.Name == failed.Serves && d.cert != nil {
				old, _ = pki.LoadCert(d.files[0])
			}
		}
		err = r.Node.Reloaded(ctx, failed.Name, old)
	} else {
		err = r.Node.Restart(ctx, failed.Name)
	}
	res := ComponentReport{Name: failed.Name, Action: ActionRestarted, Result: ResultRolledBack}
	if failed.Reloads {
		res.Action = ActionReloaded
	}
	if err != nil {
		ce.RollbackErr = err
		res.Result, res.Error = ResultFailed, err.Error()
		rep.Pending = append(rep.Pending, failed.Name)
	}
	rep.Components = append(rep.Components, res)
	return ce
}

func names(cs []Component) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ", ")
}

// lockRun takes an exclusive lock on the file at path (made when
// missing), so that two runs (the timer's and one by hand) never renew or
// restart at the same time; the second fails at once. The lock goes with
// the process, so a killed run leaves none behind.
func lockRun(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("making the folder of the renewal lock: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the renewal lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another certificate renewal is running (it holds %s)", path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
