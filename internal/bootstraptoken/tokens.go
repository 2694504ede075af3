package bootstraptoken

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/tokenformat"
)

// ExistsError is Create's error for a token ID that is already taken.
type ExistsError struct{ ID string }

func (e *ExistsError) Error() string { return fmt.Sprintf("a token with id %q already exists", e.ID) }

// CreateOrUpdate stores each token as its Secret: a missing Secret is
// created and an existing one (same token ID) is replaced, so running it
// again converges. The expiration of a token with a TTL counts from now.
func CreateOrUpdate(ctx context.Context, c kubernetes.Interface, tokens []kubeadm.BootstrapToken, now time.Time) error {
	return store(ctx, c, tokens, now, false)
}

// Create stores each token as a new Secret, as "kubeadm token create"
// does. It stops at the first token whose ID is already taken, with an
// *ExistsError; the tokens before it stay created.
func Create(ctx context.Context, c kubernetes.Interface, tokens []kubeadm.BootstrapToken, now time.Time) error {
	return store(ctx, c, tokens, now, true)
}

func store(ctx context.Context, c kubernetes.Interface, tokens []kubeadm.BootstrapToken, now time.Time, failIfExists bool) error {
	secrets := c.CoreV1().Secrets(metav1.NamespaceSystem)
	for _, tok := range tokens {
		s, err := Secret(tok, now)
		if err != nil {
			return err
		}
		id := tok.Token.ID
		err = apiclient.RetryWrite(ctx, func() error {
			// Look first, as upstream does, so a dry run shows the same calls.
			_, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
			switch {
			case err == nil && failIfExists:
				return &ExistsError{ID: id}
			case err == nil:
				_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
			case apierrors.IsNotFound(err):
				_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					if failIfExists {
						return &ExistsError{ID: id}
					}
					_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
				}
			}
			return err
		})
		var exists *ExistsError
		if errors.As(err, &exists) {
			return err
		}
		if err != nil {
			return fmt.Errorf("storing bootstrap token %q in Secret %s/%s: %w", id, s.Namespace, s.Name, err)
		}
	}
	return nil
}

// List returns the bootstrap tokens stored in kube-system, in the API
// server's order (by Secret name). Secrets of the bootstrap token type
// that do not hold a well-formed token are left out; skipped says why, one
// error per Secret, without their token secrets.
func List(ctx context.Context, c kubernetes.Interface) (tokens []kubeadm.BootstrapToken, skipped []error, err error) {
	selector := fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
	list, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the bootstrap token Secrets in %s: %w", metav1.NamespaceSystem, err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if s.Type != bootstrapapi.SecretTypeBootstrapToken {
			continue
		}
		tok, err := FromSecret(s)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		tokens = append(tokens, *tok)
	}
	return tokens, skipped, nil
}

// Delete removes the Secret of the token with this ID, whatever its type.
// A token that does not exist is an error (apierrors.IsNotFound).
func Delete(ctx context.Context, c kubernetes.Interface, id string) error {
	name := SecretName(id)
	if err := c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting bootstrap token %q: %w", id, err)
	}
	return nil
}

// ParseID returns the token ID of s, which is either a whole token
// ("abcdef.0123456789abcdef") or just its ID ("abcdef"). The error shows
// s with anything after its first dot hidden.
func ParseID(s string) (string, error) {
	if tokenformat.IsValidID(s) {
		return s, nil
	}
	if tokenformat.IsValid(s) {
		id, _, _ := strings.Cut(s, ".")
		return id, nil
	}
	return "", fmt.Errorf("%q is neither a bootstrap token ID of the form [a-z0-9]{6} nor a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}", redact(s))
}

// redact hides what may be a token secret in s: whatever follows the first
// dot, or everything after six characters when there is no dot.
func redact(s string) string {
	if id, _, ok := strings.Cut(s, "."); ok {
		return id + ".<redacted>"
	}
	if len(s) > 6 {
		return s[:6] + "<redacted>"
	}
	return s
}
