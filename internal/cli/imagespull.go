package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// imagesPullOptions are the flags of "config images pull".
type imagesPullOptions struct {
	configPath        string
	kubernetesVersion string
	imageRepository   string
	featureGates      string
	criSocket         string
}

// pullPlan is what "config images pull" is going to do.
type pullPlan struct {
	images []string
	// socket is the container runtime's endpoint.
	socket string
	policy corev1.PullPolicy
	serial bool
}

func newConfigImagesPullCmd(streams Streams) *cobra.Command {
	o := &imagesPullOptions{}
	cmd := &cobra.Command{
		Use:   "pull",
		Short: "Pull the images a cluster made with this configuration needs",
		Long: `Pull every image that "kubeadm config images list" names for the same file
or flags into the container runtime, through its CRI socket, so that a later
"kubeadm init" or "kubeadm join" finds them in place.

The runtime is reached through --cri-socket or the criSocket field of the
file; when neither names a socket, through the one runtime socket found on
this machine, as "kubeadm init" does.

An InitConfiguration in the file may choose how: nodeRegistration.imagePullPolicy
Always pulls every image, IfNotPresent only the missing ones, and Never pulls
nothing and fails when an image is missing; without a policy every image is
pulled. nodeRegistration.imagePullSerial: false pulls a few images at once
instead of one after the other. A failed image does not stop the others;
every failure is reported at the end.

When --config is given, the version, repository, feature gates and socket
come from the file and the flags that set them are ignored.`,
		Example: `  kubeadm config images pull --kubernetes-version v1.36.3
  kubeadm config images pull --config kubeadm.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			env := hostEnvironment(streams.Err)
			plan, err := o.plan(ctx, env, cmd.Flags())
			if err != nil {
				return err
			}
			rt, err := cri.Dial(ctx, plan.socket, cri.Options{})
			if err != nil {
				return fmt.Errorf("could not reach the container runtime: %w", err)
			}
			defer rt.Close()
			return pullImages(ctx, rt, plan, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.criSocket, "cri-socket", "", "Container runtime socket URL (default: detected).")
	f.StringVar(&o.featureGates, "feature-gates", "", "Comma-separated key=value pairs of kubeadm feature gates.")
	f.StringVar(&o.imageRepository, "image-repository", v1beta4.DefaultImageRepository, "Registry to pull the control-plane images from.")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "stable-1", "Kubernetes version (or release label) of the control plane.")
	return cmd
}

// plan builds the defaulted, validated configuration the way "init" does,
// CRI socket detection included, and reads off the images and how to pull
// them.
func (o *imagesPullOptions) plan(ctx context.Context, env config.Environment, flags *pflag.FlagSet) (*pullPlan, error) {
	var docs *config.Documents
	if o.configPath != "" {
		var ignored []string
		for _, name := range []string{"cri-socket", "feature-gates", "image-repository", "kubernetes-version"} {
			if flags.Changed(name) {
				ignored = append(ignored, "--"+name)
			}
		}
		if len(ignored) > 0 {
			// Upstream kubeadm ignores them without a word; we only warn,
			// to stay compatible, but say so.
			env.Warn("ignoring %s: with --config the file decides", strings.Join(ignored, ", "))
		}
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		docs = d
	} else {
		cluster, err := imageFlagsCluster(o.kubernetesVersion, o.imageRepository, o.featureGates)
		if err != nil {
			return nil, err
		}
		docs = &config.Documents{
			Source:  "flags",
			Init:    &v1beta4.InitConfiguration{NodeRegistration: v1beta4.NodeRegistrationOptions{CRISocket: o.criSocket}},
			Cluster: cluster,
		}
	}
	// Upstream's command pulls every image whatever the configuration says.
	// We honour a policy the user wrote down, so read it before defaulting
	// fills in IfNotPresent; without one, pull everything as upstream does.
	policy := corev1.PullAlways
	if docs.Init != nil && docs.Init.NodeRegistration.ImagePullPolicy != "" {
		policy = docs.Init.NodeRegistration.ImagePullPolicy
	}
	cfg, err := loadInitConfig(ctx, env, docs, config.DefaultOptions{SkipAddress: true})
	if err != nil {
		return nil, err
	}
	serial := cfg.NodeRegistration.ImagePullSerial == nil || *cfg.NodeRegistration.ImagePullSerial
	return &pullPlan{
		images: images.List(&cfg.ClusterConfiguration),
		socket: cfg.NodeRegistration.CRISocket,
		policy: policy,
		serial: serial,
	}, nil
}

// pullImages makes the plan's images present in rt, printing a line for
// each image once it is there, and returns every failure at once.
func pullImages(ctx context.Context, rt cri.ImagePuller, p *pullPlan, out io.Writer) error {
	errs := cri.EnsureImages(ctx, rt, p.images, cri.PullOptions{
		Policy: p.policy,
		Serial: p.serial,
		Done: func(image string, pulled bool) {
			if pulled {
				fmt.Fprintf(out, "[config/images] Pulled %s\n", image)
			} else {
				fmt.Fprintf(out, "[config/images] Already present: %s\n", image)
			}
		},
	})
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &pullError{socket: p.socket, total: len(p.images), errs: failed}
}

// pullError lists the images "config images pull" could not make present,
// one per line.
type pullError struct {
	socket string
	total  int
	errs   []error
}

func (e *pullError) Error() string {
	var b strings.Builder
	if len(e.errs) == 1 {
		fmt.Fprintf(&b, "1 of %d images could not be pulled by the container runtime at %s:", e.total, e.socket)
	} else {
		fmt.Fprintf(&b, "%d of %d images could not be pulled by the container runtime at %s:", len(e.errs), e.total, e.socket)
	}
	for _, err := range e.errs {
		b.WriteString("\n\t")
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e *pullError) Unwrap() []error { return e.errs }
