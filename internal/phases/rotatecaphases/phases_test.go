package rotatecaphases

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

func TestPhaseNames(t *testing.T) {
	r := &workflow.Runner[*Data]{Phases: Phases()}
	names, err := r.PhaseNames()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"prepare", "trust", "sign", "finish"}; !reflect.DeepEqual(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
}

// A node without a control plane makes no CA: they would differ from the
// first control-plane node's.
func TestPrepareOnWorker(t *testing.T) {
	d := &Data{}
	d.ManifestDir = "/etc/kubernetes/manifests"
	err := runPrepare(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "this node runs no control plane") {
		t.Fatalf("got %v", err)
	}
}
