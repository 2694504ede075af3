package staticpod

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Probe timings shared by every component.
const (
	probeInitialDelaySeconds = 10
	probeTimeoutSeconds      = 15
	probePeriodSeconds       = 10
	livenessFailureThreshold = 8

	readinessPeriodSeconds    = 1
	readinessFailureThreshold = 3
)

// probeTarget is where a component's probes connect.
type probeTarget struct {
	host   string // "" lets the kubelet use the Pod's IP
	port   int32
	scheme corev1.URIScheme
}

func (t probeTarget) get(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Host:   t.host,
		Path:   path,
		Port:   intstr.FromString(probePortName),
		Scheme: t.scheme,
	}}
}

// liveness restarts a component that stops answering.
func (t probeTarget) liveness(path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        t.get(path),
		InitialDelaySeconds: probeInitialDelaySeconds,
		TimeoutSeconds:      probeTimeoutSeconds,
		PeriodSeconds:       probePeriodSeconds,
		FailureThreshold:    livenessFailureThreshold,
	}
}

// readiness marks a component ready when it answers.
func (t probeTarget) readiness(path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     t.get(path),
		TimeoutSeconds:   probeTimeoutSeconds,
		PeriodSeconds:    readinessPeriodSeconds,
		FailureThreshold: readinessFailureThreshold,
	}
}

// startup gives a component the health-check timeout to come up: as many
// periods as it takes to cover it, rounded up.
func (t probeTarget) startup(path string, timeout time.Duration) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        t.get(path),
		InitialDelaySeconds: probeInitialDelaySeconds,
		TimeoutSeconds:      probeTimeoutSeconds,
		PeriodSeconds:       probePeriodSeconds,
		FailureThreshold:    startupFailureThreshold(timeout),
	}
}

func startupFailureThreshold(timeout time.Duration) int32 {
	if timeout <= 0 {
		return 0
	}
	period := probePeriodSeconds * time.Second
	return int32((timeout + period - 1) / period)
}

// bindAddressHost is the probe host for a component bound to addr: none
// (the Pod's IP) when it binds every address.
func bindAddressHost(addr string) string {
	switch addr {
	case "0.0.0.0", "::":
		return ""
	}
	return addr
}

// etcdMetricsTarget finds where etcd serves /livez and /readyz: the first
// of its metrics URLs. Parts the URL does not give (or a URL that does not
// parse) fall back to plain HTTP on the loopback address and the default
// metrics port.
func etcdMetricsTarget(metricsURLs, loopbackHost string) probeTarget {
	t := probeTarget{host: loopbackHost, port: EtcdMetricsPort, scheme: corev1.URISchemeHTTP}
	first, _, _ := strings.Cut(metricsURLs, ",")
	u, err := url.Parse(first)
	if err != nil {
		return t
	}
	if h := u.Hostname(); h != "" {
		t.host = h
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		t.port = int32(p)
	}
	if u.Scheme == "https" {
		t.scheme = corev1.URISchemeHTTPS
	}
	return t
}

// HealthURL is the endpoint the kubelet asks to tell whether pod's first
// container is up: its readiness probe's, else its liveness probe's, else
// its startup probe's HTTP GET, with a named port looked up among the
// container's ports and an empty host meaning the loopback address (the
// control-plane Pods use the host's network).
func HealthURL(pod *corev1.Pod) (string, error) {
	if pod == nil || len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("the Pod has no container")
	}
	c := pod.Spec.Containers[0]
	var get *corev1.HTTPGetAction
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p != nil && p.HTTPGet != nil {
			get = p.HTTPGet
			break
		}
	}
	if get == nil {
		return "", fmt.Errorf("container %q has no HTTP probe", c.Name)
	}
	port := get.Port.IntValue()
	if get.Port.Type == intstr.String {
		port = 0
		for _, cp := range c.Ports {
			if cp.Name == get.Port.StrVal {
				port = int(cp.ContainerPort)
			}
		}
	}
	if port <= 0 {
		return "", fmt.Errorf("container %q: the port of its probe (%s) is unknown", c.Name, get.Port.String())
	}
	host := get.Host
	if host == "" {
		host = "127.0.0.1"
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: get.Path}
	return u.String(), nil
}
