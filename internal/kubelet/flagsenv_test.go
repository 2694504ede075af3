package kubelet

import (
	"reflect"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

func TestParseFlagsEnv(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		want   []kubeadm.Arg
		wantOK bool
	}{
		{
			name:   "as kubeadm writes it",
			data:   string(FlagsEnv([]kubeadm.Arg{{Name: "node-ip", Value: "10.0.0.1"}, {Name: "v", Value: "2"}})),
			want:   []kubeadm.Arg{{Name: "node-ip", Value: "10.0.0.1"}, {Name: "v", Value: "2"}},
			wantOK: true,
		},
		{
			name:   "plain quotes, other lines, a flag without value",
			data:   "# written by hand\nOTHER=1\n  KUBELET_KUBEADM_ARGS='--a=b  --rotate'\n",
			want:   []kubeadm.Arg{{Name: "a", Value: "b"}, {Name: "rotate"}},
			wantOK: true,
		},
		{name: "empty value", data: `KUBELET_KUBEADM_ARGS=""` + "\n", wantOK: true},
		{name: "no such line", data: "KUBELET_EXTRA_ARGS=--a=b\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseFlagsEnv([]byte(tc.data))
			if ok != tc.wantOK || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseFlagsEnv = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestWithoutFlags(t *testing.T) {
	data := []byte("# kept\n" + `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=10.0.0.1 --container-runtime-endpoint=unix:///x"` + "\n")
	got, removed := WithoutFlags(data, ContainerRuntimeEndpointFlag)
	if want := "# kept\n" + `KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.1"` + "\n"; string(got) != want {
		t.Errorf("WithoutFlags =\n%s\nwant\n%s", got, want)
	}
	if len(removed) != 2 || removed[0].Value != "unix:///run/containerd/containerd.sock" {
		t.Errorf("removed %v", removed)
	}
	again, removed := WithoutFlags(got, ContainerRuntimeEndpointFlag)
	if string(again) != string(got) || removed != nil {
		t.Errorf("a second pass changed %q into %q (removed %v)", got, again, removed)
	}
}

func TestFlagValue(t *testing.T) {
	args := []kubeadm.Arg{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}, {Name: "a", Value: "3"}}
	if v, ok := FlagValue(args, "a"); !ok || v != "3" {
		t.Errorf("FlagValue(a) = %q, %v; want the last one, 3", v, ok)
	}
	if _, ok := FlagValue(args, "c"); ok {
		t.Error("FlagValue found a flag that is not there")
	}
}
