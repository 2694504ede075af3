package coredns

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/addons"
	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Apply creates the addon's objects, or replaces existing ones with them,
// all together (see apiclient.Together; a dry run shows them in this
// order: ConfigMap, ClusterRole, ClusterRoleBinding, ServiceAccount,
// Deployment, Service). Two things already in the cluster
// are kept: a Corefile someone changed (see customized; the default one of
// an older release is not told apart from a user's) or, while the kube-dns
// Deployment still runs (a switch from kube-dns), what kube-dns's
// ConfigMap sets (see FromKubeDNS), and the replica count
// of the DNS Deployment found (see addons.KeptReplicas), unless a's PatchDeployment sets another. A
// nil a.Service is left out (see internal/addons/clusterdns, which
// switches the Service itself). a is not modified.
//
// Idempotent: applying the same Addon again changes nothing.
func Apply(ctx context.Context, cs kubernetes.Interface, a *Addon) error {
	// What is kept from the cluster: both reads together.
	var (
		existing, kubeDNS *corev1.ConfigMap
		list              *appsv1.DeploymentList
	)
	err := apiclient.FirstError(apiclient.Together(cs,
		func() error {
			var err error
			kubeDNS, err = cs.CoreV1().ConfigMaps(Namespace).Get(ctx, KubeDNSName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				kubeDNS = nil
			case err != nil:
				return fmt.Errorf("reading ConfigMap %s/%s: %w", Namespace, KubeDNSName, err)
			}
			return nil
		},
		func() error {
			var err error
			existing, err = cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				existing = nil
			case err != nil:
				return fmt.Errorf("reading ConfigMap %s/%s: %w", Namespace, Name, err)
			}
			return nil
		},
		func() error {
			var err error
			list, err = cs.AppsV1().Deployments(Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelKey + "=" + LabelValue})
			if err != nil {
				return fmt.Errorf("listing the DNS Deployments in %s: %w", Namespace, err)
			}
			return nil
		},
	))
	if err != nil {
		return err
	}
	cm := a.ConfigMap.DeepCopy()
	switch {
	case existing != nil && customized(existing.Data[CorefileKey], a.dnsDomain):
		cm.Data[CorefileKey] = existing.Data[CorefileKey]
	case kubeDNS != nil && runs(list.Items, KubeDNSName):
		// Taking over from kube-dns: its configuration goes on.
		corefile, ok, err := FromKubeDNS(a.dnsDomain, kubeDNS.Data)
		if err != nil {
			return fmt.Errorf("translating kube-dns's configuration for CoreDNS: %w", err)
		}
		if ok {
			cm.Data[CorefileKey] = corefile
		}
	}

	deploy := a.Deployment.DeepCopy()
	if n := addons.KeptReplicas(list.Items, Name); n != nil {
		deploy.Spec.Replicas = n
	}
	if deploy, err = a.patchedDeployment(deploy); err != nil {
		return err
	}

	steps := []apiclient.Write{
		{What: "ConfigMap " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.CoreV1().ConfigMaps(Namespace), cm)
		}},
		{What: "ClusterRole " + ClusterRoleName, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.RbacV1().ClusterRoles(), a.ClusterRole.DeepCopy())
		}},
		{What: "ClusterRoleBinding " + ClusterRoleName, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.RbacV1().ClusterRoleBindings(), a.ClusterRoleBinding.DeepCopy())
		}},
		{What: "ServiceAccount " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.CoreV1().ServiceAccounts(Namespace), a.ServiceAccount.DeepCopy())
		}},
		{What: "Deployment " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.AppsV1().Deployments(Namespace), deploy)
		}},
	}
	if a.Service != nil {
		steps = append(steps, apiclient.Write{What: "Service " + Namespace + "/" + ServiceName, Do: func() error {
			return apiclient.ReplaceService(ctx, cs, a.Service.DeepCopy())
		}})
	}
	return apiclient.WriteTogether(cs, "creating or updating", steps...)
}

// runs reports whether a Deployment of that name is among list.
func runs(list []appsv1.Deployment, name string) bool {
	for _, d := range list {
		if d.Name == name {
			return true
		}
	}
	return false
}
