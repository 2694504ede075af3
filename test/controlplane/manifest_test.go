package controlplane

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func hostPathVolume(name, p string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}}
}

func TestHostArgs(t *testing.T) {
	volumes := []corev1.Volume{
		hostPathVolume("pki", "/etc/kubernetes/pki"),
		hostPathVolume("etcd-pki", "/srv/etcd-pki"),
		hostPathVolume("conf", "/etc/kubernetes/controller-manager.conf"),
		hostPathVolume("data", "/var/lib/etcd"),
	}
	mounts := []corev1.VolumeMount{
		{Name: "pki", MountPath: "/etc/kubernetes/pki"},
		{Name: "etcd-pki", MountPath: "/etc/kubernetes/pki/etcd"},
		{Name: "conf", MountPath: "/etc/kubernetes/controller-manager.conf"},
		{Name: "data", MountPath: "/data"},
	}
	tests := []struct {
		name    string
		command []string
		args    []string
		want    []string
		wantErr string
	}{{
		name:    "paths go through the longest mount, other values stay",
		command: []string{"etcd"},
		args: []string{
			"--cert-file=/etc/kubernetes/pki/etcd/server.crt",
			"--client-ca-file=/etc/kubernetes/pki/ca.crt",
			"--kubeconfig=/etc/kubernetes/controller-manager.conf",
			"--data-dir=/data",
			"--listen-client-urls=https://127.0.0.1:2379",
			"--leader-elect",
			"/data/member",
		},
		want: []string{
			"etcd",
			"--cert-file=/R/srv/etcd-pki/server.crt",
			"--client-ca-file=/R/etc/kubernetes/pki/ca.crt",
			"--kubeconfig=/R/etc/kubernetes/controller-manager.conf",
			"--data-dir=/R/var/lib/etcd",
			"--listen-client-urls=https://127.0.0.1:2379",
			"--leader-elect",
			"/R/var/lib/etcd/member",
		},
	}, {
		name:    "a prefix that is not a folder boundary does not match",
		command: []string{"x", "--file=/etc/kubernetes/pkix/a"},
		wantErr: "no hostPath volume mounts",
	}, {
		name:    "an unmounted path is an error",
		command: []string{"x"},
		args:    []string{"--kubeconfig=/etc/kubernetes/scheduler.conf"},
		wantErr: "/etc/kubernetes/scheduler.conf",
	}, {
		name:    "no command",
		wantErr: "no command",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{
				Volumes: volumes,
				Containers: []corev1.Container{{
					Name: "c", Command: tt.command, Args: tt.args, VolumeMounts: mounts,
				}},
			}}
			got, err := hostArgs(pod, "/R")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("hostArgs error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("hostArgs: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("hostArgs =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestHostArgsRejectsNonHostPathVolume(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{
			Name: "c", Command: []string{"x"}, VolumeMounts: []corev1.VolumeMount{{Name: "e", MountPath: "/e"}},
		}},
	}}
	if _, err := hostArgs(pod, "/R"); err == nil || !strings.Contains(err.Error(), "not a hostPath volume") {
		t.Fatalf("hostArgs error = %v, want one about a non-hostPath volume", err)
	}
}

func TestReadinessProbe(t *testing.T) {
	get := func(host, path string, port intstr.IntOrString, scheme corev1.URIScheme) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: host, Path: path, Port: port, Scheme: scheme,
		}}}
	}
	ports := []corev1.ContainerPort{{Name: "probe-port", ContainerPort: 2381}}
	tests := []struct {
		name      string
		container corev1.Container
		want      probeTarget
		wantErr   string
	}{{
		name: "readiness first, named port",
		container: corev1.Container{
			Ports:          ports,
			ReadinessProbe: get("127.0.0.1", "/readyz", intstr.FromString("probe-port"), corev1.URISchemeHTTP),
			LivenessProbe:  get("127.0.0.1", "/livez", intstr.FromString("probe-port"), corev1.URISchemeHTTP),
		},
		want: probeTarget{url: "http://127.0.0.1:2381/readyz"},
	}, {
		name: "startup probe when no readiness probe, empty host is the node's",
		container: corev1.Container{
			StartupProbe:  get("", "healthz", intstr.FromInt32(10257), corev1.URISchemeHTTPS),
			LivenessProbe: get("127.0.0.1", "/livez", intstr.FromInt32(1), corev1.URISchemeHTTP),
		},
		want: probeTarget{url: "https://10.199.0.2:10257/healthz", https: true},
	}, {
		name:      "unknown named port",
		container: corev1.Container{LivenessProbe: get("", "/", intstr.FromString("nope"), "")},
		wantErr:   "not a declared port",
	}, {
		name:      "no probe",
		container: corev1.Container{},
		wantErr:   "no HTTP probe",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readinessProbe(&tt.container, "10.199.0.2")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readinessProbe error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("readinessProbe: %v", err)
			}
			if got != tt.want {
				t.Errorf("readinessProbe = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadPodRejectsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: v1\nkind: Pod\nspec:\n  containerz: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readPod(file); err == nil {
		t.Fatal("readPod accepted an unknown field")
	}
}
