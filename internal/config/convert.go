package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
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
