package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Groups and versions of the component configuration documents.
var (
	KubeletGroupVersion   = kubeletv1beta1.SchemeGroupVersion
	KubeProxyGroupVersion = kubeproxyv1alpha1.SchemeGroupVersion
)

// Kinds of the component configuration documents.
const (
	KindKubelet   = kubeadm.KindKubeletConfiguration
	KindKubeProxy = kubeadm.KindKubeProxyConfiguration
)

// oldVersions maps kubeadm API versions this tool no longer reads to the
// last upstream kubeadm release that can still migrate them.
var oldVersions = map[string]string{
	"v1alpha1": "v1.11",
	"v1alpha2": "v1.12",
	"v1alpha3": "v1.14",
	"v1beta1":  "v1.15",
	"v1beta2":  "v1.22",
	"v1beta3":  "v1.36",
}

// Strictness says what to do with unknown or duplicated fields.
type Strictness int

const (
	// Lenient reports unknown and duplicated fields as warnings, as init and
	// join do.
	Lenient Strictness = iota
	// Strict refuses them, as "config validate" does.
	Strict
)

// Documents is a decoded configuration file: every document it held, in
// the internal form, with what was said about them along the way.
type Documents struct {
	// Source names the file for messages ("" when it came from elsewhere).
	Source string

	Init    *v1beta4.InitConfiguration
	Cluster *v1beta4.ClusterConfiguration
	Join    *v1beta4.JoinConfiguration
	Reset   *v1beta4.ResetConfiguration
	Upgrade *v1beta4.UpgradeConfiguration

	Kubelet   *kubeletv1beta1.KubeletConfiguration
	KubeProxy *kubeproxyv1alpha1.KubeProxyConfiguration

	// Kinds lists the kinds of the documents read (kubeadm's and the
	// component configurations), in the file's order.
	Kinds []string

	// Warnings are problems that did not stop decoding.
	Warnings []string
	// Deprecations say which documents use an old format version.
	Deprecations []string
	// Experimental names the documents of an experimental API version
	// (kubeadm.k8s.io/v1), which only commands with
	// --allow-experimental-api take.
	Experimental []string
}

// ReadFile reads and decodes a configuration file. A file that cannot be
// read is a plain error; one larger than boundedread.MaxFile, or that does
// not decode, is invalid input (exit code 3).
func ReadFile(path string, strict Strictness) (*Documents, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if errors.Is(err, boundedread.ErrTooLarge) {
		return nil, exitcode.ValidationError(fmt.Errorf("unable to read config from %q: %w", path, err))
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read config from %q: %w", path, err)
	}
	docs, err := Decode(data, strict)
	if err != nil {
		return nil, exitcode.ValidationError(fmt.Errorf("%s: %w", path, err))
	}
	docs.Source = path
	return docs, nil
}

// Decode splits data into documents and decodes each into its v1beta4 form
// Component configurations are decoded as
// they are; defaults come later.
func Decode(data []byte, strict Strictness) (*Documents, error) {
	split, err := SplitDocuments(data)
	if err != nil {
		return nil, err
	}
	out := &Documents{}
	seen := map[schema.GroupVersionKind]bool{}
	for _, d := range split {
		gvk := d.GVK
		if seen[gvk] {
			return nil, fmt.Errorf("the file holds more than one %s document (apiVersion %s)", gvk.Kind, gvk.GroupVersion())
		}
		seen[gvk] = true

		var obj any
		switch gvk.Group {
		case v1beta4.GroupName:
			switch gvk.Version {
			case "v1beta4":
				obj, err = newV1beta4(gvk.Kind)
			case "v1":
				// The experimental placeholder of the next version has
				// v1beta4's kinds and fields for now.
				obj, err = newV1beta4(gvk.Kind)
				out.Experimental = append(out.Experimental, fmt.Sprintf("the API version %s (kind %s)", gvk.GroupVersion(), gvk.Kind))
			default:
				if release, ok := oldVersions[gvk.Version]; ok {
					return nil, fmt.Errorf("the %s document uses the API version %s, which this kubeadm no longer reads; kubeadm %s can still read it: use that release's 'kubeadm config migrate --old-config OLD --new-config NEW' to convert the file to a newer version first", gvk.Kind, gvk.GroupVersion(), release)
				}
				return nil, fmt.Errorf("the %s document uses the unknown API version %s; the supported version is %s", gvk.Kind, gvk.GroupVersion(), v1beta4.SchemeGroupVersion)
			}
			if err != nil {
				return nil, err
			}
		case KubeletGroupVersion.Group:
			if gvk.GroupVersion() != KubeletGroupVersion || gvk.Kind != KindKubelet {
				return nil, fmt.Errorf("unsupported component configuration %s %s; this kubeadm reads %s %s", gvk.GroupVersion(), gvk.Kind, KubeletGroupVersion, KindKubelet)
			}
			obj = &kubeletv1beta1.KubeletConfiguration{}
		case KubeProxyGroupVersion.Group:
			if gvk.GroupVersion() != KubeProxyGroupVersion || gvk.Kind != KindKubeProxy {
				return nil, fmt.Errorf("unsupported component configuration %s %s; this kubeadm reads %s %s", gvk.GroupVersion(), gvk.Kind, KubeProxyGroupVersion, KindKubeProxy)
			}
			obj = &kubeproxyv1alpha1.KubeProxyConfiguration{}
		default:
			out.Warnings = append(out.Warnings, fmt.Sprintf("ignoring document %d: kubeadm does not know apiVersion %s kind %s", d.Index+1, gvk.GroupVersion(), gvk.Kind))
			continue
		}

		problems, err := d.Strict(obj)
		if err != nil {
			return nil, fmt.Errorf("decoding %s (%s): %w", gvk.Kind, gvk.GroupVersion(), decodeError(d.JSON, obj, cleanJSONError(err)))
		}
		for _, p := range problems {
			msg := fmt.Sprintf("%s (%s): %s", gvk.Kind, gvk.GroupVersion(), p)
			if strict == Strict {
				return nil, fmt.Errorf("strict decoding failed: %s", msg)
			}
			out.Warnings = append(out.Warnings, msg)
		}

		out.Kinds = append(out.Kinds, gvk.Kind)
		switch o := obj.(type) {
		case *v1beta4.InitConfiguration:
			out.Init = o
		case *v1beta4.ClusterConfiguration:
			out.Cluster = o
		case *v1beta4.JoinConfiguration:
			out.Join = o
		case *v1beta4.ResetConfiguration:
			out.Reset = o
		case *v1beta4.UpgradeConfiguration:
			out.Upgrade = o
		case *kubeletv1beta1.KubeletConfiguration:
			out.Kubelet = o
		case *kubeproxyv1alpha1.KubeProxyConfiguration:
			out.KubeProxy = o
		}
	}
	return out, nil
}

func newV1beta4(kind string) (any, error) {
	switch kind {
	case v1beta4.KindInitConfiguration:
		return &v1beta4.InitConfiguration{}, nil
	case v1beta4.KindClusterConfiguration:
		return &v1beta4.ClusterConfiguration{}, nil
	case v1beta4.KindJoinConfiguration:
		return &v1beta4.JoinConfiguration{}, nil
	case v1beta4.KindResetConfiguration:
		return &v1beta4.ResetConfiguration{}, nil
	case v1beta4.KindUpgradeConfiguration:
		return &v1beta4.UpgradeConfiguration{}, nil
	}
	return nil, unknownKind(kind, v1beta4.SchemeGroupVersion, "InitConfiguration, ClusterConfiguration, JoinConfiguration, ResetConfiguration, UpgradeConfiguration")
}

func unknownKind(kind string, gv schema.GroupVersion, known string) error {
	return fmt.Errorf("unknown kind %q for apiVersion %s; the kinds of that version are %s", kind, gv, known)
}

// cleanJSONError drops the decoder's internal prefixes so the message says
// what was wrong with the field.
func cleanJSONError(err error) error {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: while decoding JSON: ", "json: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return fmt.Errorf("%s", msg)
}

// Unused returns the kinds of Kinds that are not among used, in the
// file's order: the documents a command that reads only used ignores.
func (d *Documents) Unused(used ...string) []string {
	var out []string
	for _, k := range d.Kinds {
		if !slices.Contains(used, k) {
			out = append(out, k)
		}
	}
	return out
}
