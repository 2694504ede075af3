package upgrade

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// CRISocketAnnotation is the Node annotation in which kubeadm before
// v1.32 kept each node's CRI socket. The kubelet's instance-config.yaml
// holds it now, and an upgrade removes the annotation, as upstream's does.
const CRISocketAnnotation = "kubeadm.alpha.kubernetes.io/cri-socket"

// RemoveCRISocketAnnotation takes CRISocketAnnotation off the Node called
// name and reports whether it was there. A Node without it is left
// untouched, so running it again changes nothing.
func RemoveCRISocketAnnotation(ctx context.Context, c kubernetes.Interface, name string) (bool, error) {
	node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading Node %q: %w", name, err)
	}
	if _, ok := node.Annotations[CRISocketAnnotation]; !ok {
		return false, nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, CRISocketAnnotation))
	err = apiclient.RetryWrite(ctx, func() error {
		_, err := c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("removing the annotation %s from Node %q: %w", CRISocketAnnotation, name, err)
	}
	return true, nil
}
