package kubeproxy

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Apply creates the addon's objects, or replaces existing ones with them,
// all together (see apiclient.Together; a dry run shows them in this order:
// ConfigMap (annotated with DataHash when Generated), DaemonSet,
// ServiceAccount, ClusterRoleBinding, Role, RoleBinding), the DaemonSet
// with a's PatchDaemonSet applied. Changes made in
// the cluster to these objects are overwritten. a is not modified.
//
// Idempotent: applying the same Addon again changes nothing.
func Apply(ctx context.Context, cs kubernetes.Interface, a *Addon) error {
	ds, err := a.patchedDaemonSet()
	if err != nil {
		return err
	}
	cm := a.ConfigMap.DeepCopy()
	if a.Generated {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[HashAnnotation] = DataHash(cm)
	}

	steps := []apiclient.Write{
		{What: "ConfigMap " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.CoreV1().ConfigMaps(Namespace), cm)
		}},
		{What: "DaemonSet " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.AppsV1().DaemonSets(Namespace), ds.DeepCopy())
		}},
		{What: "ServiceAccount " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.CoreV1().ServiceAccounts(Namespace), a.ServiceAccount.DeepCopy())
		}},
		{What: "ClusterRoleBinding " + NodeProxierBinding, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.RbacV1().ClusterRoleBindings(), a.ClusterRoleBinding.DeepCopy())
		}},
		{What: "Role " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.RbacV1().Roles(Namespace), a.Role.DeepCopy())
		}},
		{What: "RoleBinding " + Namespace + "/" + Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, cs.RbacV1().RoleBindings(Namespace), a.RoleBinding.DeepCopy())
		}},
	}
	return apiclient.WriteTogether(cs, "creating or updating", steps...)
}
