package preflight

import (
	"context"
	"net"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/cri/critest"
)

func TestOSHostListenTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if err := NewHost().ListenTCP(port); err == nil {
		t.Errorf("ListenTCP(%d) of a held port succeeded", port)
	}
}

// The real host dials through package cri; the CRI checks then work on
// what it returns.
func TestOSHostDialCRI(t *testing.T) {
	endpoint := critest.Start(t, &critest.Server{NoRuntimeConfig: true})
	h := NewHost()
	for _, c := range []Check{ContainerRuntime(h, endpoint), ContainerRuntimeVersion(h, endpoint)} {
		r := c.Run(context.Background())
		if len(r.Errors) > 0 {
			t.Errorf("%s: errors %q", c.Name, messages(r.Errors))
		}
		if c.Name == "ContainerRuntimeVersion" && len(r.Warnings) != 1 {
			t.Errorf("%s: warnings %q, want the RuntimeConfig one", c.Name, messages(r.Warnings))
		}
	}
	r := ImagePull(h, endpoint, ImagePullOptions{Images: []string{"registry.k8s.io/pause:3.10.2"}, Serial: true}).Run(context.Background())
	if len(r.Errors) > 0 {
		t.Errorf("ImagePull: %q", messages(r.Errors))
	}
}
