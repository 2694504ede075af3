package apilb

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// RBACName names the Role and RoleBinding that let every node's balancer,
// with its kubelet's credentials, follow the `kubernetes` EndpointSlice.
const RBACName = "kubeadm:apiserver-lb"

// Role lets its holders read and watch the `kubernetes` EndpointSlice of
// the default namespace, and nothing else.
func Role() *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: RBACName, Namespace: EndpointSliceNamespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{"discovery.k8s.io"},
			Resources:     []string{"endpointslices"},
			ResourceNames: []string{EndpointSliceName},
			Verbs:         []string{"get", "list", "watch"},
		}},
	}
}

// RoleBinding grants Role to every node (the group system:nodes).
func RoleBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: RBACName, Namespace: EndpointSliceNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RBACName},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
}

// EnsureRBAC creates Role and RoleBinding, or replaces them with these
// contents; running it again converges.
func EnsureRBAC(ctx context.Context, c kubernetes.Interface) error {
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(EndpointSliceNamespace), Role()); err != nil {
		return fmt.Errorf("creating or updating Role %s/%s: %w", EndpointSliceNamespace, RBACName, err)
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(EndpointSliceNamespace), RoleBinding()); err != nil {
		return fmt.Errorf("creating or updating RoleBinding %s/%s: %w", EndpointSliceNamespace, RBACName, err)
	}
	return nil
}
