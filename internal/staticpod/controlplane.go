package staticpod

import (
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// APIServerPod returns the kube-apiserver Pod. It listens on the node's
// bind port, advertises the node's address, reaches the local etcd on the
// loopback address, or at the client URLs the etcd extra arguments make it
// advertise, or the external etcd's endpoints, and is probed on its
// advertise address.
func APIServerPod(c *kubeadm.ClusterConfiguration, n Node, o Options) (*corev1.Pod, error) {
	adv, v6, err := n.advertised()
	if err != nil {
		return nil, fmt.Errorf("building the kube-apiserver manifest: %w", err)
	}
	port := n.BindPort
	pki := func(name string) string { return filepath.Join(c.CertificatesDir, name) }

	flags := map[string]string{
		"advertise-address":                  adv,
		"secure-port":                        strconv.Itoa(int(port)),
		"allow-privileged":                   "true",
		"authorization-mode":                 DefaultAuthorizationModes,
		"enable-admission-plugins":           "NodeRestriction",
		"enable-bootstrap-token-auth":        "true",
		"client-ca-file":                     pki("ca.crt"),
		"tls-cert-file":                      pki("apiserver.crt"),
		"tls-private-key-file":               pki("apiserver.key"),
		"kubelet-client-certificate":         pki("apiserver-kubelet-client.crt"),
		"kubelet-client-key":                 pki("apiserver-kubelet-client.key"),
		"kubelet-preferred-address-types":    "InternalIP,ExternalIP,Hostname",
		"proxy-client-cert-file":             pki("front-proxy-client.crt"),
		"proxy-client-key-file":              pki("front-proxy-client.key"),
		"requestheader-client-ca-file":       pki("front-proxy-ca.crt"),
		"requestheader-allowed-names":        "front-proxy-client",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"service-account-issuer":             "https://kubernetes.default.svc." + c.Networking.DNSDomain,
		"service-account-key-file":           pki("sa.pub"),
		"service-account-signing-key-file":   pki("sa.key"),
		"service-cluster-ip-range":           c.Networking.ServiceSubnet,
	}
	vs := volumeSet{}
	vs.add(volumeK8sCerts, c.CertificatesDir, c.CertificatesDir, true, corev1.HostPathDirectoryOrCreate)
	vs.addCACerts(o)
	if hardened(c) {
		hardenAPIServer(c, flags, vs, o)
	}
	if ext := c.Etcd.External; ext != nil {
		flags["etcd-servers"] = strings.Join(ext.Endpoints, ",")
		for flag, file := range map[string]string{"etcd-cafile": ext.CAFile, "etcd-certfile": ext.CertFile, "etcd-keyfile": ext.KeyFile} {
			if file != "" {
				flags[flag] = file
			}
		}
		vs.addExternalEtcdCerts(c.CertificatesDir, ext)
	} else {
		// The API server follows the client URLs etcd is told to advertise.
		flags["etcd-servers"] = hostURL("https", loopback(v6), EtcdClientPort)
		if c.Etcd.Local != nil {
			if urls, ok := (args{extra: c.Etcd.Local.ExtraArgs}).value("advertise-client-urls"); ok {
				flags["etcd-servers"] = urls
			}
		}
		flags["etcd-cafile"] = filepath.Join(c.CertificatesDir, "etcd", "ca.crt")
		flags["etcd-certfile"] = pki("apiserver-etcd-client.crt")
		flags["etcd-keyfile"] = pki("apiserver-etcd-client.key")
	}
	a := args{defaults: flags, extra: c.APIServer.ExtraArgs}
	for _, mode := range a.extraValues("authorization-mode") {
		if mode != DefaultAuthorizationModes {
			o.warn("the default kube-apiserver authorization-mode is %q; using %q", DefaultAuthorizationModes, mode)
		}
	}
	vs.addExtra(c.APIServer.ExtraVolumes)
	vols, mounts := vs.sorted()

	probe := probeTarget{host: adv, port: port, scheme: corev1.URISchemeHTTPS}
	container := corev1.Container{
		Name:           KubeAPIServer,
		Image:          images.ControlPlane(c, images.KubeAPIServer),
		Command:        a.command("kube-apiserver"),
		Env:            containerEnv(o.Environ, true, c.APIServer.ExtraEnvs),
		Ports:          probePort(port),
		Resources:      requests("250m", ""),
		VolumeMounts:   mounts,
		LivenessProbe:  probe.liveness("/livez"),
		ReadinessProbe: probe.readiness("/readyz"),
		StartupProbe:   probe.startup("/livez", n.HealthCheckTimeout),
	}
	endpoint := net.JoinHostPort(adv, strconv.Itoa(int(port)))
	return componentPod(container, vols, map[string]string{AnnotationAPIServerEndpoint: endpoint}), nil
}

// ControllerManagerPod returns the kube-controller-manager Pod. It signs
// certificates with the cluster CA unless Options.ExternalCA, and allocates
// node Pod ranges when the configuration has a Pod subnet.
func ControllerManagerPod(c *kubeadm.ClusterConfiguration, n Node, o Options) (*corev1.Pod, error) {
	pki := func(name string) string { return filepath.Join(c.CertificatesDir, name) }
	kubeconfig := filepath.Join(KubernetesDir, "controller-manager.conf")
	flags := map[string]string{
		"bind-address":                     "127.0.0.1",
		"leader-elect":                     "true",
		"kubeconfig":                       kubeconfig,
		"authentication-kubeconfig":        kubeconfig,
		"authorization-kubeconfig":         kubeconfig,
		"client-ca-file":                   pki("ca.crt"),
		"requestheader-client-ca-file":     pki("front-proxy-ca.crt"),
		"root-ca-file":                     pki("ca.crt"),
		"service-account-private-key-file": pki("sa.key"),
		"cluster-signing-cert-file":        pki("ca.crt"),
		"cluster-signing-key-file":         pki("ca.key"),
		"use-service-account-credentials":  "true",
		"controllers":                      "*,bootstrapsigner,tokencleaner",
		"cluster-name":                     c.ClusterName,
	}
	if o.ExternalCA {
		flags["cluster-signing-cert-file"] = ""
		flags["cluster-signing-key-file"] = ""
	}
	if hardened(c) {
		maps.Copy(flags, cis.ControllerManagerFlags())
	}
	if c.Networking.PodSubnet != "" {
		flags["allocate-node-cidrs"] = "true"
		flags["cluster-cidr"] = c.Networking.PodSubnet
		flags["service-cluster-ip-range"] = c.Networking.ServiceSubnet
	}
	a := args{defaults: flags, extra: c.ControllerManager.ExtraArgs}

	vs := volumeSet{}
	vs.add(volumeK8sCerts, c.CertificatesDir, c.CertificatesDir, true, corev1.HostPathDirectoryOrCreate)
	vs.addCACerts(o)
	vs.add(volumeKubeconfig, kubeconfig, kubeconfig, true, corev1.HostPathFileOrCreate)
	vs.addExtra(c.ControllerManager.ExtraVolumes)
	vols, mounts := vs.sorted()

	bind, _ := a.value("bind-address")
	probe := probeTarget{host: bindAddressHost(bind), port: ControllerManagerPort, scheme: corev1.URISchemeHTTPS}
	container := corev1.Container{
		Name:          KubeControllerManager,
		Image:         images.ControlPlane(c, images.KubeControllerManager),
		Command:       a.command("kube-controller-manager"),
		Env:           containerEnv(o.Environ, true, c.ControllerManager.ExtraEnvs),
		Ports:         probePort(ControllerManagerPort),
		Resources:     requests("200m", ""),
		VolumeMounts:  mounts,
		LivenessProbe: probe.liveness("/healthz"),
		StartupProbe:  probe.startup("/healthz", n.HealthCheckTimeout),
	}
	return componentPod(container, vols, nil), nil
}

// SchedulerPod returns the kube-scheduler Pod.
func SchedulerPod(c *kubeadm.ClusterConfiguration, n Node, o Options) (*corev1.Pod, error) {
	kubeconfig := filepath.Join(KubernetesDir, "scheduler.conf")
	flags := map[string]string{
		"bind-address":              "127.0.0.1",
		"leader-elect":              "true",
		"kubeconfig":                kubeconfig,
		"authentication-kubeconfig": kubeconfig,
		"authorization-kubeconfig":  kubeconfig,
	}
	if hardened(c) {
		maps.Copy(flags, cis.SchedulerFlags())
	}
	a := args{defaults: flags, extra: c.Scheduler.ExtraArgs}
	vs := volumeSet{}
	vs.add(volumeKubeconfig, kubeconfig, kubeconfig, true, corev1.HostPathFileOrCreate)
	vs.addExtra(c.Scheduler.ExtraVolumes)
	vols, mounts := vs.sorted()

	bind, _ := a.value("bind-address")
	probe := probeTarget{host: bindAddressHost(bind), port: SchedulerPort, scheme: corev1.URISchemeHTTPS}
	container := corev1.Container{
		Name:           KubeScheduler,
		Image:          images.ControlPlane(c, images.KubeScheduler),
		Command:        a.command("kube-scheduler"),
		Env:            containerEnv(o.Environ, true, c.Scheduler.ExtraEnvs),
		Ports:          probePort(SchedulerPort),
		Resources:      requests("100m", ""),
		VolumeMounts:   mounts,
		LivenessProbe:  probe.liveness("/livez"),
		ReadinessProbe: probe.readiness("/readyz"),
		StartupProbe:   probe.startup("/livez", n.HealthCheckTimeout),
	}
	return componentPod(container, vols, nil), nil
}
