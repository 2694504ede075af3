package bootstraptoken

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	real := fake.NewClientset(tokenSecret("abcdef", nil))
	var out bytes.Buffer
	c := apiclient.DryRunClient(&out, real)

	tokens := []kubeadm.BootstrapToken{defaultToken("abcdef", time.Hour), defaultToken("ghijkl", time.Hour)}
	var exists *ExistsError
	if err := Create(ctx, c, tokens, testNow); !errors.As(err, &exists) {
		t.Fatalf("Create of a token the cluster has: %v", err)
	}
	if err := CreateOrUpdate(ctx, c, tokens, testNow); err != nil {
		t.Fatal(err)
	}
	runAll(t, c)
	// What the dry run "wrote" is seen by later reads through it...
	if _, err := c.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-ghijkl", metav1.GetOptions{}); err != nil {
		t.Errorf("reading back a token the dry run created: %v", err)
	}
	listed, _, err := List(ctx, c)
	if err != nil || len(listed) != 1 {
		t.Errorf("listing through the dry run reads the cluster: %d tokens, %v", len(listed), err)
	}
	if err := Delete(ctx, c, "zzzzzz"); err != nil {
		t.Errorf("a dry-run delete fails: %v", err)
	}
	// ...but the cluster only saw reads.
	for _, a := range real.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("the dry run sent %s %s to the cluster", v, a.GetResource().Resource)
		}
	}
	printed := out.String()
	for _, want := range []string{
		"[dryrun] Would perform action GET on resource \"secrets\" in API group \"core/v1\"\n[dryrun] Resource name \"bootstrap-token-abcdef\", namespace \"kube-system\"\n[dryrun] Attached object:\napiVersion: v1\n",
		"[dryrun] Would perform action GET on resource \"secrets\" in API group \"core/v1\"\n[dryrun] Resource name \"bootstrap-token-ghijkl\", namespace \"kube-system\"\n[dryrun] Real object does not exist. Attempting to GET from followup reactors or from the fake client tracker\n[dryrun] Would perform action CREATE on resource \"secrets\" in API group \"core/v1\"\n[dryrun] Attached object:\napiVersion: v1\n",
		"[dryrun] Would perform action UPDATE on resource \"secrets\" in API group \"core/v1\"\n",
		"[dryrun] Would perform action CREATE on resource \"clusterrolebindings\" in API group \"rbac.authorization.k8s.io/v1\"\n[dryrun] Attached object:\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: kubeadm:get-nodes\n",
		"[dryrun] Would perform action LIST on resource \"secrets\" in API group \"core/v1\"\n[dryrun] Attached object:\napiVersion: v1\nitems:\n- apiVersion: v1\n",
		"[dryrun] Would perform action DELETE on resource \"secrets\" in API group \"core/v1\"\n[dryrun] Resource name \"bootstrap-token-zzzzzz\", namespace \"kube-system\"\n[dryrun] Attached object:\napiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-zzzzzz\n  namespace: kube-system\n\n",
		"token-secret: PHJlZGFjdGVkPg==\n", // base64 of <redacted>
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("dry-run output lacks\n%s", want)
		}
	}
	if strings.Contains(printed, "MDEyMzQ1Njc4OWFiY2RlZg==") || strings.Contains(printed, testSecret) {
		t.Error("the dry run printed a token secret")
	}
}

func TestDryRunWithoutCluster(t *testing.T) {
	var out bytes.Buffer
	c := apiclient.DryRunClient(&out, nil)
	if err := CreateOrUpdate(context.Background(), c, []kubeadm.BootstrapToken{defaultToken("abcdef", 0)}, testNow); err != nil {
		t.Fatal(err)
	}
	runAll(t, c)
	if !strings.Contains(out.String(), "Real object does not exist") || !strings.Contains(out.String(), "name: cluster-info") {
		t.Errorf("output:\n%s", out.String())
	}
}
