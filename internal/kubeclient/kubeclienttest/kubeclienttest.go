// Package kubeclienttest hands client-go's fake clientset to unit tests of
// code written against kubeclient.Interface. It is for tests only: linking
// client-go's typed clientset is what kubeclient spares the binary
// (test/arch checks).
package kubeclienttest

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/kubeclient"
)

// Fake is client-go's fake clientset as a kubeclient.Interface: its
// reactors, recorded actions and object tracker are client-go's own.
type Fake struct {
	*fake.Clientset
}

// NewClientset returns a fake clientset holding objs (see client-go's
// fake.NewClientset).
func NewClientset(objs ...runtime.Object) *Fake { return &Fake{fake.NewClientset(objs...)} }

func (f *Fake) CoreV1() kubeclient.CoreV1   { return coreV1{f.Clientset} }
func (f *Fake) RbacV1() kubeclient.RbacV1   { return rbacV1{f.Clientset} }
func (f *Fake) AppsV1() kubeclient.AppsV1   { return appsV1{f.Clientset} }
func (f *Fake) BatchV1() kubeclient.BatchV1 { return batchV1{f.Clientset} }
func (f *Fake) CertificatesV1() kubeclient.CertificatesV1 {
	return certificatesV1{f.Clientset}
}
func (f *Fake) Discovery() kubeclient.Discovery { return f.Clientset.Discovery() }

// clientset holds the clientset the group views below serve from.
type clientset struct{ cs kubernetes.Interface }

type (
	coreV1         clientset
	rbacV1         clientset
	appsV1         clientset
	batchV1        clientset
	certificatesV1 clientset
)

func (c coreV1) ConfigMaps(ns string) kubeclient.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.cs.CoreV1().ConfigMaps(ns)
}

func (c coreV1) Nodes() kubeclient.Resource[*corev1.Node, *corev1.NodeList] {
	return c.cs.CoreV1().Nodes()
}

func (c coreV1) Secrets(ns string) kubeclient.Resource[*corev1.Secret, *corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}

func (c coreV1) Pods(ns string) kubeclient.Resource[*corev1.Pod, *corev1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}

func (c coreV1) ServiceAccounts(ns string) kubeclient.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

func (c coreV1) Services(ns string) kubeclient.Resource[*corev1.Service, *corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}

func (c rbacV1) Roles(ns string) kubeclient.Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return c.cs.RbacV1().Roles(ns)
}

func (c rbacV1) RoleBindings(ns string) kubeclient.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return c.cs.RbacV1().RoleBindings(ns)
}

func (c rbacV1) ClusterRoles() kubeclient.Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return c.cs.RbacV1().ClusterRoles()
}

func (c rbacV1) ClusterRoleBindings() kubeclient.Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return c.cs.RbacV1().ClusterRoleBindings()
}

func (c appsV1) Deployments(ns string) kubeclient.Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return c.cs.AppsV1().Deployments(ns)
}

func (c appsV1) DaemonSets(ns string) kubeclient.Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return c.cs.AppsV1().DaemonSets(ns)
}

func (c batchV1) Jobs(ns string) kubeclient.Resource[*batchv1.Job, *batchv1.JobList] {
	return c.cs.BatchV1().Jobs(ns)
}

func (c certificatesV1) CertificateSigningRequests() kubeclient.CertificateSigningRequests {
	return c.cs.CertificatesV1().CertificateSigningRequests()
}
