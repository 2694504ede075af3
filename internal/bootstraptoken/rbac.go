package bootstraptoken

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Names of the RBAC objects, and the identities they grant, as upstream
// kubeadm creates them.
const (
	// NodeBootstrapGroup is the extra group of the tokens kubeadm makes for
	// joining nodes; the bindings below are for this group whatever groups
	// the configured tokens have.
	NodeBootstrapGroup = v1beta4.DefaultTokenGroup

	GetNodesName                 = "kubeadm:get-nodes"
	KubeletBootstrapName         = "kubeadm:kubelet-bootstrap"
	NodeAutoApproveBootstrapName = "kubeadm:node-autoapprove-bootstrap"
	NodeAutoApproveRotationName  = "kubeadm:node-autoapprove-certificate-rotation"
	APIServerKubeletClientName   = "kubeadm:apiserver-kubelet-client"
	ClusterInfoReaderName        = "kubeadm:bootstrap-signer-clusterinfo"
	nodeBootstrapperRole         = "system:node-bootstrapper"
	nodeClientApprovalRole       = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	selfNodeClientApprovalRole   = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
	kubeletAPIAdminRole          = "system:kubelet-api-admin"
	nodesGroup                   = "system:nodes"
	apiServerKubeletClientUser   = "kube-apiserver-kubelet-client"
	anonymousUser                = "system:anonymous"
	clusterRoleKind              = "ClusterRole"
	roleKind                     = "Role"
)

// A Step is one part of the bootstrap-token phase after the tokens: the
// line upstream kubeadm prints before it (without the "[bootstrap-token] "
// prefix) and what it creates or updates.
type Step struct {
	Message string
	Run     func(ctx context.Context, c kubernetes.Interface) error
}

// RBACSteps returns the RBAC steps of the bootstrap-token phase in
// upstream's order. Each creates its objects or replaces them with these
// contents, so running them again converges.
func RBACSteps() []Step {
	return []Step{
		{
			Message: "Configured RBAC rules to allow Node Bootstrap tokens to get nodes",
			Run: func(ctx context.Context, c kubernetes.Interface) error {
				if err := apply(ctx, c.RbacV1().ClusterRoles(), "ClusterRole", GetNodesClusterRole()); err != nil {
					return err
				}
				return apply(ctx, c.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", GetNodesBinding())
			},
		},
		{
			Message: "Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials",
			Run: func(ctx context.Context, c kubernetes.Interface) error {
				return apply(ctx, c.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", KubeletBootstrapBinding())
			},
		},
		{
			Message: "Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token",
			Run: func(ctx context.Context, c kubernetes.Interface) error {
				return apply(ctx, c.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", NodeAutoApproveBootstrapBinding())
			},
		},
		{
			Message: "Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster",
			Run: func(ctx context.Context, c kubernetes.Interface) error {
				return apply(ctx, c.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", NodeAutoApproveRotationBinding())
			},
		},
		{
			Message: "Configured RBAC rules to allow the API server kubelet client certificate to access the kubelet API",
			Run: func(ctx context.Context, c kubernetes.Interface) error {
				return apply(ctx, c.RbacV1().ClusterRoleBindings(), "ClusterRoleBinding", APIServerKubeletClientBinding())
			},
		},
	}
}

// object is what every object applied here has.
type object interface {
	GetName() string
	GetNamespace() string
}

// apply creates obj or replaces the existing object of its name, with the
// object's kind and name in the error.
func apply[T object](ctx context.Context, c interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}, kind string, obj T) error {
	if err := apiclient.CreateOrUpdate(ctx, c, obj); err != nil {
		name := obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		return fmt.Errorf("creating or updating %s %s: %w", kind, name, err)
	}
	return nil
}

// GetNodesClusterRole lets its holders get Node objects; a joining node
// reads its own Node before the kubelet registers it.
func GetNodesClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: GetNodesName},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"nodes"},
			Verbs:     []string{"get"},
		}},
	}
}

// GetNodesBinding grants GetNodesClusterRole to the node bootstrap group.
func GetNodesBinding() *rbacv1.ClusterRoleBinding {
	return clusterRoleBinding(GetNodesName, GetNodesName, group(NodeBootstrapGroup))
}

// KubeletBootstrapBinding lets the node bootstrap group post CSRs.
func KubeletBootstrapBinding() *rbacv1.ClusterRoleBinding {
	return clusterRoleBinding(KubeletBootstrapName, nodeBootstrapperRole, group(NodeBootstrapGroup))
}

// NodeAutoApproveBootstrapBinding has the controller manager approve the
// node client CSRs that the node bootstrap group posts.
func NodeAutoApproveBootstrapBinding() *rbacv1.ClusterRoleBinding {
	return clusterRoleBinding(NodeAutoApproveBootstrapName, nodeClientApprovalRole, group(NodeBootstrapGroup))
}

// NodeAutoApproveRotationBinding has the controller manager approve the
// CSRs nodes post to renew their own client certificates.
func NodeAutoApproveRotationBinding() *rbacv1.ClusterRoleBinding {
	return clusterRoleBinding(NodeAutoApproveRotationName, selfNodeClientApprovalRole, group(nodesGroup))
}

// APIServerKubeletClientBinding lets the API server's kubelet client
// certificate (user kube-apiserver-kubelet-client) use the kubelet API.
func APIServerKubeletClientBinding() *rbacv1.ClusterRoleBinding {
	return clusterRoleBinding(APIServerKubeletClientName, kubeletAPIAdminRole, user(apiServerKubeletClientUser))
}

// ClusterInfoReaderRole lets its holders get the cluster-info ConfigMap.
func ClusterInfoReaderRole() *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoReaderName, Namespace: metav1.NamespacePublic},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"configmaps"},
			ResourceNames: []string{ClusterInfoName},
			Verbs:         []string{"get"},
		}},
	}
}

// ClusterInfoReaderBinding grants ClusterInfoReaderRole to anonymous users.
func ClusterInfoReaderBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoReaderName, Namespace: metav1.NamespacePublic},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: ClusterInfoReaderName},
		Subjects:   []rbacv1.Subject{user(anonymousUser)},
	}
}

// clusterRoleBinding binds a ClusterRole to one subject. The subject's
// apiGroup is left for the API server to default, as upstream does.
func clusterRoleBinding(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: clusterRoleKind, Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}

func group(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: name} }
func user(name string) rbacv1.Subject  { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: name} }
