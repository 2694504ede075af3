package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/podrestart"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// renewalEnv is what "certs renew expiring" and check-expiration's
// renewal line take from the machine; the zero value is the real one.
type renewalEnv struct {
	// root prefixes the schedule's files and the status file ("": /).
	root string
	// host runs the init system's commands (nil: this machine).
	host kubelet.Host
	// node restarts and watches the components (nil: the real ones,
	// through the container runtime the kubelet uses).
	node func(ctx context.Context, timeout time.Duration) (certrenewal.Node, func(), error)
}

func (e renewalEnv) schedule(out io.Writer) certrenewal.Schedule {
	h := e.host
	if h == nil {
		h = kubelet.OSHost{}
	}
	return certrenewal.Schedule{Host: h, Root: e.root, Out: out}
}

func (e renewalEnv) statusPath() string { return e.root + certrenewal.StatusPath }

// dialKubeletRuntime connects to the container runtime this node's kubelet
// uses (the renewal's and the CA rotation's restarts go through it).
func dialKubeletRuntime(ctx context.Context) (cri.Runtime, error) {
	socket, _, err := upgrade.KubeletCRISocket(initphases.KubeletDir)
	if err != nil {
		return nil, fmt.Errorf("finding the kubelet's container runtime: %w", err)
	}
	if socket == "" {
		return nil, fmt.Errorf("finding the kubelet's container runtime: %s names none", initphases.KubeletDir)
	}
	return cri.Dial(ctx, socket, cri.Options{})
}

// realNode connects to the container runtime this node's kubelet uses;
// leaders (nil: no wait) waits for a restarted controller manager or
// scheduler to lead.
func realNode(ctx context.Context, timeout time.Duration, leaders *leaderlease.Waiter) (certrenewal.Node, func(), error) {
	rt, err := dialKubeletRuntime(ctx)
	if err != nil {
		return nil, nil, err
	}
	n := &certrenewal.NodeComponents{
		ManifestDir: initphases.ManifestsDir,
		Restarter:   &podrestart.Restarter{Runtime: rt, Timeout: timeout, Leaders: leaders},
		Timeout:     timeout,
	}
	return n, func() { rt.Close() }, nil
}

// leaderWaiter reads the Leases through the kubeconfig file, with a
// client made at each wait: the run may have renewed the file since it
// began, and an expired certificate would read nothing. unreadable is
// leaderlease.Waiter's.
func leaderWaiter(kubeconfig string, newClient func(string) (kubernetes.Interface, error), timeout, unreadable time.Duration, out io.Writer, prefix string) *leaderlease.Waiter {
	newClient = kubeconfigClient(newClient)
	return &leaderlease.Waiter{
		NewClient: func() (kubernetes.Interface, error) { return newClient(kubeconfig) },
		Timeout:   timeout, Unreadable: unreadable, Out: out, Prefix: prefix,
	}
}

// renewalUnreadable is how long the renewal tries to read a restarted
// component's Lease before it goes on without knowing whether it leads.
const renewalUnreadable = 30 * time.Second

// ---- certs renew expiring ----

type renewExpiringOptions struct {
	certsConfigFlags
	within           time.Duration
	restart          bool
	output           string
	allowMissingKeys *bool
}

func newRenewExpiringCmd(streams Streams, env certsEnv) *cobra.Command {
	o := &renewExpiringOptions{}
	cmd := &cobra.Command{
		Use:   "expiring",
		Short: "Renew what expires soon and have the components use it",
		Long: `Renew the certificates of this node, and the client certificates embedded in
its kubeconfig files, that expire within --within; leave every other one
alone, so that running it again renews nothing. The previous files are
copied to a dated folder under /etc/kubernetes/tmp first.

Then the control-plane components that use a renewed certificate are taken
one at a time, each waited for until healthy before the next:
kube-controller-manager and kube-scheduler are restarted through the
container runtime; etcd and kube-apiserver read their renewed files by
themselves and are waited for until they serve them. A component that does
not come back gets its previous certificates back and the command fails.

Where the key of a CA is not on the node (external CA), nothing is renewed:
the command names what will expire and when, and fails.

"kubeadm init" and a control-plane "kubeadm join" install a daily timer that
runs this command (phase certs-renewal); its latest run is shown by
"kubeadm certs check-expiration".`,
		Example: `  # What the daily timer runs
  kubeadm certs renew expiring

  # Renew what expires within 30 days, report as JSON
  kubeadm certs renew expiring --within 720h -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), streams, env)
		},
	}
	f := cmd.Flags()
	o.add(f)
	f.DurationVar(&o.within, "within", certrenewal.DefaultWindow, "Renew what expires within this time.")
	f.BoolVar(&o.restart, "restart-components", true, "Restart (or wait for) the components that use a renewed certificate; false leaves that to you.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text|"+output.Formats+" (the report; the log then goes to standard error).")
	o.allowMissingKeys = addPrinterFlags(f)
	return cmd
}

func (o *renewExpiringOptions) run(ctx context.Context, streams Streams, env certsEnv) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.within <= 0 {
		return exitcode.ValidationError(fmt.Errorf("--within must be a positive duration, not %v", o.within))
	}
	printer, err := newPrinter(o.output, *o.allowMissingKeys)
	if err != nil {
		return exitcode.ValidationError(err)
	}
	log := streams.Out
	if printer != nil {
		log = streams.Err // the document alone on standard output
	}
	cc, certDir, err := o.load(ctx, streams, env, log, "certs-renewal", true)
	if err != nil {
		return err
	}
	cluster := &cc.cfg.ClusterConfiguration
	if v := kubeadmValidity(cluster); v > 0 && v <= o.within {
		fmt.Fprintf(log, "[certs-renewal] WARNING: certificates are made valid for %v, no longer than --within (%v): every run will renew them again\n", v, o.within)
	}
	now := env.now()
	r := &certrenewal.Renewer{
		Cfg:           cluster,
		CertDir:       certDir,
		KubeconfigDir: env.kubernetesDir,
		BackupDir:     upgrade.BackupDirName(env.kubernetesDir+"/tmp", "certs", now),
		StatusPath:    env.renewal.statusPath(),
		Window:        o.within,
		Now:           env.now,
		NewKey:        env.newKey,
		Out:           log,
	}
	if o.restart {
		timeout := v1beta4.DefaultControlPlaneComponentHealthCheck
		if t := cc.cfg.Timeouts; t != nil && t.ControlPlaneComponentHealthCheck != nil && t.ControlPlaneComponentHealthCheck.Duration > 0 {
			timeout = t.ControlPlaneComponentHealthCheck.Duration
		}
		newNode := env.renewal.node
		if newNode == nil {
			leaders := leaderWaiter(o.kubeconfig, env.clusterClient, timeout, renewalUnreadable, log, "[certs-renewal]")
			newNode = func(ctx context.Context, timeout time.Duration) (certrenewal.Node, func(), error) {
				return realNode(ctx, timeout, leaders)
			}
		}
		node, closeNode, err := newNode(ctx, timeout)
		if err != nil {
			return fmt.Errorf("reaching the control-plane components: %w", err)
		}
		defer closeNode()
		r.Node = node
	}
	rep, err := r.Run(ctx)
	if printer != nil && rep != nil {
		if perr := printer.Print(streams.Out, rep); perr != nil {
			return errors.Join(err, perr)
		}
	}
	if err != nil {
		return err
	}
	if printer == nil {
		fmt.Fprintf(log, "[certs-renewal] Done: %d renewed, %d not due\n", len(rep.Renewed), len(rep.NotDue))
	}
	return nil
}

// kubeadmValidity is the validity cluster gives new leaf certificates.
func kubeadmValidity(cluster *kubeadm.ClusterConfiguration) time.Duration {
	if cluster.CertificateValidityPeriod != nil {
		return cluster.CertificateValidityPeriod.Duration
	}
	return 0
}

// printRenewalStatus writes check-expiration's line about the automatic
// renewal: whether its schedule is installed and its latest run.
func printRenewalStatus(ctx context.Context, out io.Writer, env renewalEnv) {
	if ctx == nil {
		ctx = context.Background()
	}
	s := env.schedule(io.Discard)
	files := s.Installed()
	fmt.Fprintln(out)
	if len(files) == 0 {
		fmt.Fprintf(out, "Automatic renewal: not installed (no %s timer or periodic script; \"kubeadm init phase certs-renewal\" installs it)\n", certrenewal.UnitName)
	} else {
		state := "installed"
		if !s.Enabled(ctx) {
			state = "installed but not enabled"
		}
		fmt.Fprintf(out, "Automatic renewal: %s (%s)\n", state, strings.Join(files, ", "))
	}
	rep, err := certrenewal.ReadStatus(env.statusPath())
	switch {
	case err != nil:
		fmt.Fprintf(out, "Last renewal run: unknown (%v)\n", err)
	case rep == nil:
		fmt.Fprintln(out, "Last renewal run: never")
	default:
		result := "succeeded"
		if rep.Error != "" {
			result = "FAILED: " + rep.Error
		} else if rep.Finished == nil {
			result = "did not finish"
		}
		fmt.Fprintf(out, "Last renewal run: %s, renewed %d, %s\n", rep.Time.UTC().Format(time.RFC3339), len(rep.Renewed), result)
		if len(rep.Pending) > 0 {
			fmt.Fprintf(out, "Components still to restart: %s\n", strings.Join(rep.Pending, ", "))
		}
	}
}
