package staticpod

import (
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// EtcdPod returns the Pod of a single-member local etcd: it serves clients
// on the loopback address and the node's advertise address, peers on the
// advertise address, and its metrics (which the probes use) on the
// loopback address. The configuration must use local etcd.
func EtcdPod(c *kubeadm.ClusterConfiguration, n Node, o Options) (*corev1.Pod, error) {
	local := c.Etcd.Local
	if local == nil {
		return nil, fmt.Errorf("building the etcd manifest: the configuration uses an external etcd")
	}
	adv, v6, err := n.advertised()
	if err != nil {
		return nil, fmt.Errorf("building the etcd manifest: %w", err)
	}
	lo := loopback(v6)
	clientURL := hostURL("https", adv, EtcdClientPort)
	peerURL := hostURL("https", adv, EtcdPeerPort)
	pki := func(name string) string { return filepath.Join(c.CertificatesDir, "etcd", name) }

	a := args{
		defaults: map[string]string{
			"name":                           n.Name,
			"advertise-client-urls":          clientURL,
			"listen-client-urls":             hostURL("https", lo, EtcdClientPort) + "," + clientURL,
			"listen-metrics-urls":            hostURL("http", lo, EtcdMetricsPort),
			"listen-peer-urls":               peerURL,
			"initial-advertise-peer-urls":    peerURL,
			"initial-cluster":                n.Name + "=" + peerURL,
			"data-dir":                       local.DataDir,
			"cert-file":                      pki("server.crt"),
			"key-file":                       pki("server.key"),
			"trusted-ca-file":                pki("ca.crt"),
			"client-cert-auth":               "true",
			"peer-cert-file":                 pki("peer.crt"),
			"peer-key-file":                  pki("peer.key"),
			"peer-trusted-ca-file":           pki("ca.crt"),
			"peer-client-cert-auth":          "true",
			"snapshot-count":                 "10000",
			"feature-gates":                  "InitialCorruptCheck=true",
			"watch-progress-notify-interval": "5s",
		},
		extra: local.ExtraArgs,
	}
	if n.EtcdInitialCluster != "" {
		a.defaults["initial-cluster"] = n.EtcdInitialCluster
		a.defaults["initial-cluster-state"] = "existing"
	}
	metrics, _ := a.value("listen-metrics-urls")
	probe := etcdMetricsTarget(metrics, lo)

	// The certificates folder is joined as text here, as upstream does.
	certsDir := c.CertificatesDir + "/etcd"
	vs := volumeSet{}
	vs.add(volumeEtcdData, local.DataDir, local.DataDir, false, corev1.HostPathDirectoryOrCreate)
	vs.add(volumeEtcdCerts, certsDir, certsDir, false, corev1.HostPathDirectoryOrCreate)
	vols, _ := vs.sorted()
	mounts := []corev1.VolumeMount{vs[volumeEtcdData].mount, vs[volumeEtcdCerts].mount}

	container := corev1.Container{
		Name:           Etcd,
		Image:          images.EtcdImage(c),
		Command:        a.command("etcd"),
		Env:            containerEnv(nil, false, local.ExtraEnvs),
		Ports:          probePort(probe.port),
		Resources:      requests("100m", "100Mi"),
		VolumeMounts:   mounts,
		LivenessProbe:  probe.liveness("/livez"),
		ReadinessProbe: probe.readiness("/readyz"),
		StartupProbe:   probe.startup("/readyz", n.HealthCheckTimeout),
	}
	return componentPod(container, vols, map[string]string{AnnotationEtcdClientURLs: clientURL}), nil
}
