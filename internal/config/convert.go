package config

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta3"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Conversions between the file formats and the internal types. Older
// formats are first converted to v1beta4, so only v1beta4 converts to and
// from the internal types.

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1beta4.SchemeGroupVersion.String(), Kind: kind}
}

// ---- v1beta4 <-> internal ----

func initToInternal(in *v1beta4.InitConfiguration, cluster *v1beta4.ClusterConfiguration) *kubeadm.InitConfiguration {
	return &kubeadm.InitConfiguration{
		ClusterConfiguration: *clusterToInternal(cluster),
		BootstrapTokens:      in.BootstrapTokens,
		DryRun:               in.DryRun,
		NodeRegistration:     in.NodeRegistration,
		LocalAPIEndpoint:     in.LocalAPIEndpoint,
		CertificateKey:       in.CertificateKey,
		SkipPhases:           in.SkipPhases,
		Patches:              in.Patches,
		Timeouts:             in.Timeouts,
	}
}

func clusterToInternal(in *v1beta4.ClusterConfiguration) *kubeadm.ClusterConfiguration {
	return &kubeadm.ClusterConfiguration{
		Etcd:                        in.Etcd,
		Networking:                  in.Networking,
		KubernetesVersion:           in.KubernetesVersion,
		ControlPlaneEndpoint:        in.ControlPlaneEndpoint,
		APIServer:                   in.APIServer,
		ControllerManager:           in.ControllerManager,
		Scheduler:                   in.Scheduler,
		DNS:                         in.DNS,
		Proxy:                       in.Proxy,
		CertificatesDir:             in.CertificatesDir,
		ImageRepository:             in.ImageRepository,
		FeatureGates:                in.FeatureGates,
		ClusterName:                 in.ClusterName,
		EncryptionAlgorithm:         in.EncryptionAlgorithm,
		CertificateValidityPeriod:   in.CertificateValidityPeriod,
		CACertificateValidityPeriod: in.CACertificateValidityPeriod,
	}
}

func joinToInternal(in *v1beta4.JoinConfiguration) *kubeadm.JoinConfiguration {
	return &kubeadm.JoinConfiguration{
		DryRun:           in.DryRun,
		NodeRegistration: in.NodeRegistration,
		CACertPath:       in.CACertPath,
		Discovery:        in.Discovery,
		ControlPlane:     in.ControlPlane,
		SkipPhases:       in.SkipPhases,
		Patches:          in.Patches,
		Timeouts:         in.Timeouts,
	}
}

func resetToInternal(in *v1beta4.ResetConfiguration) *kubeadm.ResetConfiguration {
	return &kubeadm.ResetConfiguration{
		CleanupTmpDir:         in.CleanupTmpDir,
		CertificatesDir:       in.CertificatesDir,
		CRISocket:             in.CRISocket,
		DryRun:                in.DryRun,
		Force:                 in.Force,
		IgnorePreflightErrors: in.IgnorePreflightErrors,
		SkipPhases:            in.SkipPhases,
		UnmountFlags:          in.UnmountFlags,
		Timeouts:              in.Timeouts,
	}
}

func upgradeToInternal(in *v1beta4.UpgradeConfiguration) *kubeadm.UpgradeConfiguration {
	return &kubeadm.UpgradeConfiguration{
		Apply:    in.Apply,
		Diff:     in.Diff,
		Node:     in.Node,
		Plan:     in.Plan,
		Timeouts: in.Timeouts,
	}
}

// InitToV1beta4 converts c to the two v1beta4 documents it is written as.
func InitToV1beta4(c *kubeadm.InitConfiguration) (*v1beta4.InitConfiguration, *v1beta4.ClusterConfiguration) {
	return &v1beta4.InitConfiguration{
		TypeMeta:         typeMeta(v1beta4.KindInitConfiguration),
		BootstrapTokens:  c.BootstrapTokens,
		DryRun:           c.DryRun,
		NodeRegistration: c.NodeRegistration,
		LocalAPIEndpoint: c.LocalAPIEndpoint,
		CertificateKey:   c.CertificateKey,
		SkipPhases:       c.SkipPhases,
		Patches:          c.Patches,
		Timeouts:         c.Timeouts,
	}, ClusterToV1beta4(&c.ClusterConfiguration)
}

// ClusterToV1beta4 converts c to its v1beta4 document.
func ClusterToV1beta4(c *kubeadm.ClusterConfiguration) *v1beta4.ClusterConfiguration {
	return &v1beta4.ClusterConfiguration{
		TypeMeta:                    typeMeta(v1beta4.KindClusterConfiguration),
		Etcd:                        c.Etcd,
		Networking:                  c.Networking,
		KubernetesVersion:           c.KubernetesVersion,
		ControlPlaneEndpoint:        c.ControlPlaneEndpoint,
		APIServer:                   c.APIServer,
		ControllerManager:           c.ControllerManager,
		Scheduler:                   c.Scheduler,
		DNS:                         c.DNS,
		Proxy:                       c.Proxy,
		CertificatesDir:             c.CertificatesDir,
		ImageRepository:             c.ImageRepository,
		FeatureGates:                c.FeatureGates,
		ClusterName:                 c.ClusterName,
		EncryptionAlgorithm:         c.EncryptionAlgorithm,
		CertificateValidityPeriod:   c.CertificateValidityPeriod,
		CACertificateValidityPeriod: c.CACertificateValidityPeriod,
	}
}

// JoinToV1beta4 converts c to its v1beta4 document.
func JoinToV1beta4(c *kubeadm.JoinConfiguration) *v1beta4.JoinConfiguration {
	return &v1beta4.JoinConfiguration{
		TypeMeta:         typeMeta(v1beta4.KindJoinConfiguration),
		DryRun:           c.DryRun,
		NodeRegistration: c.NodeRegistration,
		CACertPath:       c.CACertPath,
		Discovery:        c.Discovery,
		ControlPlane:     c.ControlPlane,
		SkipPhases:       c.SkipPhases,
		Patches:          c.Patches,
		Timeouts:         c.Timeouts,
	}
}

// ResetToV1beta4 converts c to its v1beta4 document.
func ResetToV1beta4(c *kubeadm.ResetConfiguration) *v1beta4.ResetConfiguration {
	return &v1beta4.ResetConfiguration{
		TypeMeta:              typeMeta(v1beta4.KindResetConfiguration),
		CleanupTmpDir:         c.CleanupTmpDir,
		CertificatesDir:       c.CertificatesDir,
		CRISocket:             c.CRISocket,
		DryRun:                c.DryRun,
		Force:                 c.Force,
		IgnorePreflightErrors: c.IgnorePreflightErrors,
		SkipPhases:            c.SkipPhases,
		UnmountFlags:          c.UnmountFlags,
		Timeouts:              c.Timeouts,
	}
}

// UpgradeToV1beta4 converts c to its v1beta4 document.
func UpgradeToV1beta4(c *kubeadm.UpgradeConfiguration) *v1beta4.UpgradeConfiguration {
	return &v1beta4.UpgradeConfiguration{
		TypeMeta: typeMeta(v1beta4.KindUpgradeConfiguration),
		Apply:    c.Apply,
		Diff:     c.Diff,
		Node:     c.Node,
		Plan:     c.Plan,
		Timeouts: c.Timeouts,
	}
}

// ---- v1beta3 -> v1beta4 ----

// argsFromMap turns a v1beta3 flag map into v1beta4's ordered list, sorted
// by name so the result does not depend on map order.
func argsFromMap(m map[string]string) []v1beta4.Arg {
	if len(m) == 0 {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	args := make([]v1beta4.Arg, 0, len(m))
	for _, k := range names {
		args = append(args, v1beta4.Arg{Name: k, Value: m[k]})
	}
	return args
}

func nodeRegistrationFromV1beta3(in v1beta3.NodeRegistrationOptions) v1beta4.NodeRegistrationOptions {
	return v1beta4.NodeRegistrationOptions{
		Name:                  in.Name,
		CRISocket:             in.CRISocket,
		Taints:                in.Taints,
		KubeletExtraArgs:      argsFromMap(in.KubeletExtraArgs),
		IgnorePreflightErrors: in.IgnorePreflightErrors,
		ImagePullPolicy:       in.ImagePullPolicy,
	}
}

func initFromV1beta3(in *v1beta3.InitConfiguration) *v1beta4.InitConfiguration {
	return &v1beta4.InitConfiguration{
		TypeMeta:         typeMeta(v1beta4.KindInitConfiguration),
		BootstrapTokens:  in.BootstrapTokens,
		NodeRegistration: nodeRegistrationFromV1beta3(in.NodeRegistration),
		LocalAPIEndpoint: in.LocalAPIEndpoint,
		CertificateKey:   in.CertificateKey,
		SkipPhases:       in.SkipPhases,
		Patches:          in.Patches,
	}
}

// clusterFromV1beta3 converts a v1beta3 ClusterConfiguration. The API
// server's timeoutForControlPlane has no place there any more; it is
// returned so the caller can move it to the InitConfiguration's timeouts.
func clusterFromV1beta3(in *v1beta3.ClusterConfiguration) (*v1beta4.ClusterConfiguration, *metav1.Duration) {
	out := &v1beta4.ClusterConfiguration{
		TypeMeta:             typeMeta(v1beta4.KindClusterConfiguration),
		Networking:           in.Networking,
		KubernetesVersion:    in.KubernetesVersion,
		ControlPlaneEndpoint: in.ControlPlaneEndpoint,
		APIServer: v1beta4.APIServer{
			ControlPlaneComponent: componentFromV1beta3(in.APIServer.ControlPlaneComponent),
			CertSANs:              in.APIServer.CertSANs,
		},
		ControllerManager: componentFromV1beta3(in.ControllerManager),
		Scheduler:         componentFromV1beta3(in.Scheduler),
		DNS:               v1beta4.DNS{ImageMeta: in.DNS.ImageMeta},
		CertificatesDir:   in.CertificatesDir,
		ImageRepository:   in.ImageRepository,
		FeatureGates:      in.FeatureGates,
		ClusterName:       in.ClusterName,
	}
	if l := in.Etcd.Local; l != nil {
		out.Etcd.Local = &v1beta4.LocalEtcd{
			ImageMeta:      l.ImageMeta,
			DataDir:        l.DataDir,
			ExtraArgs:      argsFromMap(l.ExtraArgs),
			ServerCertSANs: l.ServerCertSANs,
			PeerCertSANs:   l.PeerCertSANs,
		}
	}
	if e := in.Etcd.External; e != nil {
		// v1beta3 had one list for gRPC and HTTP traffic; v1beta4 splits
		// them and starts both from the old list.
		out.Etcd.External = &v1beta4.ExternalEtcd{
			Endpoints:     e.Endpoints,
			HTTPEndpoints: e.Endpoints,
			CAFile:        e.CAFile,
			CertFile:      e.CertFile,
			KeyFile:       e.KeyFile,
		}
	}
	// v1beta3 chose ECDSA keys through the PublicKeysECDSA feature gate.
	// The gate travels on and still chooses them (see KeyAlgorithm);
	// encryptionAlgorithm keeps its default, as upstream's migration writes.
	return out, in.APIServer.TimeoutForControlPlane
}

func componentFromV1beta3(in v1beta3.ControlPlaneComponent) v1beta4.ControlPlaneComponent {
	return v1beta4.ControlPlaneComponent{
		ExtraArgs:    argsFromMap(in.ExtraArgs),
		ExtraVolumes: in.ExtraVolumes,
	}
}

func joinFromV1beta3(in *v1beta3.JoinConfiguration) *v1beta4.JoinConfiguration {
	out := &v1beta4.JoinConfiguration{
		TypeMeta:         typeMeta(v1beta4.KindJoinConfiguration),
		NodeRegistration: nodeRegistrationFromV1beta3(in.NodeRegistration),
		CACertPath:       in.CACertPath,
		Discovery: v1beta4.Discovery{
			BootstrapToken:    in.Discovery.BootstrapToken,
			File:              in.Discovery.File,
			TLSBootstrapToken: in.Discovery.TLSBootstrapToken,
		},
		ControlPlane: in.ControlPlane,
		SkipPhases:   in.SkipPhases,
		Patches:      in.Patches,
	}
	if in.Discovery.Timeout != nil {
		out.Timeouts = &v1beta4.Timeouts{Discovery: in.Discovery.Timeout}
	}
	return out
}
