package upgrade

import (
	"bytes"
	"context"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/config"
)

// TestPlanOffers: without a version asked for, the plan looks up the
// latest release of the cluster's minor and offers it before the target.
func TestPlanOffers(t *testing.T) {
	var looked []string
	env := config.Environment{ResolveVersion: func(_ context.Context, v string) (string, error) {
		looked = append(looked, v)
		return map[string]string{"stable-1.35": "v1.35.6"}[v], nil
	}}
	p := &VersionPolicy{Cluster: utilversion.MustParseSemantic("v1.35.2"), Target: utilversion.MustParseSemantic("v1.36.3")}
	var progress bytes.Buffer
	offers, err := planOffers(context.Background(), env, &progress, "", p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range offers {
		got = append(got, v.String())
	}
	if strings.Join(got, " ") != "1.35.6 1.36.3" || strings.Join(looked, " ") != "stable-1.35" {
		t.Errorf("offers %v after looking up %v, want 1.35.6 1.36.3 after stable-1.35", got, looked)
	}
	if want := "[upgrade/versions] Latest version in the v1.35 series: v1.35.6\n"; progress.String() != want {
		t.Errorf("progress %q, want %q", progress.String(), want)
	}

	// A version asked for is the only offer; nothing is looked up.
	looked, progress = nil, bytes.Buffer{}
	offers, err = planOffers(context.Background(), env, &progress, "v1.36.3", p)
	if err != nil || len(offers) != 1 || offers[0].String() != "1.36.3" || looked != nil || progress.Len() > 0 {
		t.Errorf("asked v1.36.3: offers %v, err %v, looked up %v, progress %q", offers, err, looked, progress.String())
	}
}

// TestFetchClusterConfigPrefix: the lines that say where the configuration
// comes from carry upstream's "[upgrade]" prefix (upstream v1.37.2's
// upgrade node and apply print "[upgrade] Reading configuration from the
// \"kubeadm-config\" ConfigMap ...").
func TestFetchClusterConfigPrefix(t *testing.T) {
	var out bytes.Buffer
	if _, err := FetchClusterConfig(context.Background(), fake.NewClientset(), nil, &out, false); err == nil {
		t.Fatal("a cluster without kubeadm-config gave a configuration")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("output %q, want two lines", out.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "[upgrade] ") {
			t.Errorf("line %q lacks upstream's [upgrade] prefix", l)
		}
	}
}
