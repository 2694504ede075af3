package selfhosting

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeadm-go/kubeadm/internal/noderole"
)

// DaemonSet returns the DaemonSet that runs component on every
// control-plane node, made from its static Pod (which is not changed):
//
//   - named self-hosted-<component> in kube-system, its Pods labelled
//     k8s-app=self-hosted-<component> besides the static Pod's labels, and
//     carrying its annotations;
//   - the Pod's spec, restricted to nodes with the control-plane label,
//     tolerating the control-plane taint, with dnsPolicy
//     ClusterFirstWithHostNet (the Pods use the host's network);
//   - without the container ports: on the host's network a port is a host
//     port, which the static Pod being replaced still holds, so the
//     scheduler would never place the DaemonSet Pod beside it. Probes that
//     named a port name its number instead;
//   - without spec.priority, which the API server derives from the
//     priority class.
//
// Updates roll one node at a time.
func DaemonSet(component string, pod *corev1.Pod) (*appsv1.DaemonSet, error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the %s Pod has no container", component)
	}
	name := DaemonSetName(component)
	selector := map[string]string{AppLabel: name}
	labels := maps.Clone(pod.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, selector)

	spec := *pod.Spec.DeepCopy()
	spec.NodeName = ""
	spec.Priority = nil
	spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	spec.NodeSelector = map[string]string{noderole.ControlPlaneLabel: ""}
	toleration := corev1.Toleration{Key: noderole.ControlPlaneLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	if !hasToleration(spec.Tolerations, toleration) {
		spec.Tolerations = append(spec.Tolerations, toleration)
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if err := numberProbePort(p, c.Ports); err != nil {
					return nil, fmt.Errorf("the %s Pod, container %q: %w", component, c.Name, err)
				}
			}
			c.Ports = nil
		}
	}
	maxUnavailable := intstr.FromInt32(1)
	return &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: metav1.NamespaceSystem,
			Labels:    maps.Clone(selector),
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: maps.Clone(pod.Annotations)},
				Spec:       spec,
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
		},
	}, nil
}

func hasToleration(ts []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range ts {
		if have.Key == t.Key && have.Effect == t.Effect && (have.Operator == corev1.TolerationOpExists || have.Value == t.Value) {
			return true
		}
	}
	return false
}

// numberProbePort replaces a named port of p's HTTP GET or TCP socket
// handler with the number ports give it.
func numberProbePort(p *corev1.Probe, ports []corev1.ContainerPort) error {
	if p == nil {
		return nil
	}
	var port *intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		port = &p.HTTPGet.Port
	case p.TCPSocket != nil:
		port = &p.TCPSocket.Port
	default:
		return nil
	}
	if port.Type != intstr.String {
		return nil
	}
	for _, cp := range ports {
		if cp.Name == port.StrVal {
			*port = intstr.FromInt32(cp.ContainerPort)
			return nil
		}
	}
	return fmt.Errorf("a probe names the port %q, which the container does not declare", port.StrVal)
}
