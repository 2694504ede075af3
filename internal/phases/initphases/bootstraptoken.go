package initphases

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/csrapprover"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// bootstrapTokenPrefix starts every progress line of the phase.
const bootstrapTokenPrefix = "[bootstrap-token] "

// BootstrapTokenPhase stores the configured bootstrap tokens and sets up
// what joining nodes use them with: the RBAC that lets a token holder get
// its node certificate approved and issued, the RBAC for node certificate
// rotation and the API server's kubelet client, and the public
// kube-public/cluster-info ConfigMap. Every object is created or replaced
// with the same content, so the phase can run again and converges (a token
// that exists is updated, its expiration counted again from now).
func BootstrapTokenPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:    "bootstrap-token",
		Aliases: []string{"bootstraptoken"},
		Short:   "Create the bootstrap tokens, and the RBAC rules and cluster-info ConfigMap that joining nodes need",
		Long: `Store the bootstrap tokens of the configuration (by default one new token,
valid for 24 hours) as Secrets in kube-system, and set up what a joining node
needs to use them:

  - RBAC rules that let a token holder read Nodes and post a certificate
    signing request, have the controller manager approve node client
    certificates (first ones and renewals), and let the API server's kubelet
    client certificate use the kubelet API;
  - the kube-public/cluster-info ConfigMap, readable without credentials,
    with the cluster's CA and API server address; the controller manager
    signs it with every token, so a joining node can check it.

The objects are created, or replaced when they exist, so running the phase
again is harmless.`,
		Example: `  # Create the tokens and objects "kubeadm init" would create
  kubeadm init phase bootstrap-token --config kubeadm.yaml`,
		InheritFlags: []string{"config", "kubeconfig", "dry-run", "skip-token-print"},
		Run:          runBootstrapToken,
	}
}

func runBootstrapToken(ctx context.Context, d *Data) error {
	// cluster-info comes from the admin kubeconfig; reading it first fails
	// early, before anything is printed or changed, when it is missing.
	clusterInfo, err := bootstraptoken.ClusterInfo(bootstrapTokenKubeconfig(d))
	if err != nil {
		return fmt.Errorf("building the cluster-info ConfigMap: %w", err)
	}
	c, err := bootstrapTokenClient(ctx, d)
	if err != nil {
		return err
	}
	tokens := d.Cfg.BootstrapTokens
	if !d.SkipTokenPrint {
		switch len(tokens) {
		case 0:
		case 1:
			fmt.Fprintf(d.Out, "%sUsing token: %s\n", bootstrapTokenPrefix, tokens[0].Token.String())
		default:
			values := make([]string, len(tokens))
			for i, t := range tokens {
				values[i] = t.Token.String()
			}
			fmt.Fprintf(d.Out, "%sUsing tokens: %v\n", bootstrapTokenPrefix, values)
		}
	}
	fmt.Fprintf(d.Out, "%sConfiguring bootstrap tokens, cluster-info ConfigMap, RBAC Roles\n", bootstrapTokenPrefix)
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	// The tokens, each RBAC step and cluster-info are independent: they are
	// made together and reported as if made one after the other.
	steps := bootstraptoken.RBACSteps()
	if APIServerLBEnabled(d) {
		steps = append(steps, bootstraptoken.Step{
			Message: "Configured RBAC rules to allow the node-local API server load balancers to follow the kubernetes EndpointSlice",
			Run:     apilb.EnsureRBAC,
		})
	}
	if hardened(d) {
		steps = append(steps, approverRBACStep())
	}
	calls := []func() error{func() error { return bootstraptoken.CreateOrUpdate(ctx, c, tokens, now()) }}
	for _, step := range steps {
		calls = append(calls, func() error { return step.Run(ctx, c) })
	}
	calls = append(calls, func() error { return bootstraptoken.CreateClusterInfo(ctx, c, clusterInfo) })
	return apiclient.TogetherReported(c, func(i int) {
		switch {
		case i == 0: // the tokens: announced above
		case i <= len(steps):
			fmt.Fprintf(d.Out, "%s%s\n", bootstrapTokenPrefix, steps[i-1].Message)
		default:
			fmt.Fprintf(d.Out, "%sCreating the %q ConfigMap in the %q namespace\n", bootstrapTokenPrefix, clusterInfo.Name, clusterInfo.Namespace)
		}
	}, calls...)
}

// approverRBACStep lets the kubelet serving certificate approver of the
// CISHardening profile do its job (see package csrapprover).
func approverRBACStep() bootstraptoken.Step {
	return bootstraptoken.Step{
		Message: "Configured RBAC rules to allow kubeadm's approver to approve the kubelets' serving certificates",
		Run: func(ctx context.Context, c kubernetes.Interface) error {
			if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoles(), csrapprover.ClusterRole()); err != nil {
				return fmt.Errorf("creating or updating ClusterRole %s: %w", csrapprover.RBACName, err)
			}
			if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().ClusterRoleBindings(), csrapprover.ClusterRoleBinding()); err != nil {
				return fmt.Errorf("creating or updating ClusterRoleBinding %s: %w", csrapprover.RBACName, err)
			}
			return nil
		},
	}
}

// bootstrapTokenKubeconfig is the kubeconfig file whose cluster
// cluster-info describes: --kubeconfig, else admin.conf; in a dry run
// always the admin.conf the dry run wrote, as upstream reads it.
func bootstrapTokenKubeconfig(d *Data) string {
	if d.KubeconfigPath != "" && !d.DryRun {
		return d.KubeconfigPath
	}
	return filepath.Join(d.KubeconfigDir, "admin.conf")
}

// bootstrapTokenClient is the shared client, or in a dry run without one
// a client that only prints what it would do.
func bootstrapTokenClient(ctx context.Context, d *Data) (kubernetes.Interface, error) {
	return d.Client(ctx)
}
