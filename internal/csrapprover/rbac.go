package csrapprover

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// User is the identity of the approver's kubeconfig file (its client
// certificate's common name, without groups); RBACName names its
// ClusterRole and ClusterRoleBinding.
const (
	User     = "kubeadm:kubelet-serving-approver"
	RBACName = "kubeadm:kubelet-serving-approver"
)

// ClusterRole holds what the approver needs and nothing more: to read and
// watch certificate signing requests, approve those of the kubelet serving
// signer only, and list Nodes (their addresses).
func ClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: RBACName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{SignerName}, Verbs: []string{"approve"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}},
		},
	}
}

// ClusterRoleBinding grants ClusterRole to User.
func ClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RBACName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: RBACName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: User}},
	}
}
