package kubedns

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/addons"
	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Apply creates the addon's objects, or replaces existing ones with them,
// all together. Two things already in the cluster are kept: the kube-dns
// ConfigMap (created only when missing: it holds the user's stub domains
// and upstream servers), and the replica count of the DNS Deployment
// found (see addons.KeptReplicas). A nil a.Service is left out (internal/addons/clusterdns switches
// the Service itself). a is not modified.
//
// Idempotent: applying the same Addon again changes nothing.
func Apply(ctx context.Context, cs kubernetes.Interface, a *Addon) error {
	list, err := cs.AppsV1().Deployments(Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelKey + "=" + LabelValue})
	if err != nil {
		return fmt.Errorf("listing the DNS Deployments in %s: %w", Namespace, err)
	}
	deploy := a.Deployment.DeepCopy()
	if n := addons.KeptReplicas(list.Items, Name); n != nil {
		deploy.Spec.Replicas = n
	}
	steps := []apiclient.Write{
		{What: "ConfigMap " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateIfMissing(ctx, cs.CoreV1().ConfigMaps(Namespace), a.ConfigMap.DeepCopy())
		}},
		{What: "ServiceAccount " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.CoreV1().ServiceAccounts(Namespace), a.ServiceAccount.DeepCopy())
		}},
		{What: "Deployment " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate[*appsv1.Deployment](ctx, cs.AppsV1().Deployments(Namespace), deploy)
		}},
	}
	if a.Service != nil {
		steps = append(steps, apiclient.Write{What: "Service " + Namespace + "/" + ServiceName, Do: func() error {
			return apiclient.ReplaceService(ctx, cs, a.Service.DeepCopy())
		}})
	}
	return apiclient.WriteTogether(cs, "creating or updating", steps...)
}
