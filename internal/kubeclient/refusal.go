package kubeclient

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeadm-go/kubeadm/internal/tokenformat"
)

// nodeBootstrapTokenGroup is the group kubeadm's bootstrap tokens carry,
// which its RBAC rules for joining nodes name.
const nodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// credentials is what a client authenticates with, kept to say who was
// refused. It never shows a secret: a bootstrap token shows its public ID.
type credentials struct {
	bearerToken, bearerTokenFile string
	certData                     []byte
	certFile                     string
	username                     string
	plugin                       bool
}

func credentialsOf(cfg *rest.Config) credentials {
	return credentials{
		bearerToken: cfg.BearerToken, bearerTokenFile: cfg.BearerTokenFile,
		certData: cfg.CertData, certFile: cfg.CertFile,
		username: cfg.Username,
		plugin:   cfg.ExecProvider != nil || cfg.AuthProvider != nil,
	}
}

// identity is the user the server sees, as far as the client can tell.
type identity struct {
	user           string
	bootstrapToken bool
	anonymous      bool
}

func (c credentials) identity() identity {
	token := c.bearerToken
	if token == "" && c.bearerTokenFile != "" {
		if b, err := os.ReadFile(c.bearerTokenFile); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	switch {
	case token != "" && tokenformat.IsValid(token):
		return identity{user: fmt.Sprintf("user %q (a bootstrap token)", "system:bootstrap:"+token[:6]), bootstrapToken: true}
	case token != "":
		return identity{user: "the user of the client's bearer token"}
	case len(c.certData) > 0 || c.certFile != "":
		data := c.certData
		if len(data) == 0 {
			data, _ = os.ReadFile(c.certFile)
		}
		if certs, err := certutil.ParseCertsPEM(data); err == nil {
			cert := certs[0]
			if len(cert.Subject.Organization) > 0 {
				return identity{user: fmt.Sprintf("user %q (groups %s)", cert.Subject.CommonName, strings.Join(cert.Subject.Organization, ", "))}
			}
			return identity{user: fmt.Sprintf("user %q", cert.Subject.CommonName)}
		}
		return identity{user: "the user of the client certificate"}
	case c.username != "":
		return identity{user: fmt.Sprintf("user %q", c.username)}
	case c.plugin:
		return identity{user: "the user of the credential plugin"}
	default:
		return identity{user: `anonymous user "system:anonymous"`, anonymous: true}
	}
}

// explain returns err, an API server's answer to verb on what, with a
// message that says what was refused, to whom, and why it likely was,
// when the answer carried no message of its own (an empty body or a bare
// Status, as a proxy in the way or a server cut short answers, or just
// "Unauthorized"). A 401 or 403 to a bootstrap token or an anonymous
// client also gets the likely cause after the server's own message. The
// result keeps err's status, so apierrors.IsForbidden and the like still
// answer; any other error is returned as it is.
func (c credentials) explain(err error, verb, what string) error {
	var se *apierrors.StatusError
	if err == nil || !errors.As(err, &se) {
		return err
	}
	status := se.Status()
	code := int(status.Code)
	empty := uninformative(status.Message, code)
	id := c.identity()
	cause := id.likelyCause(code)
	if !empty && cause == "" {
		return err
	}
	msg := status.Message
	if empty {
		msg = fmt.Sprintf("%s %s: the server answered %d %s without a reason, to %s", verb, what, code, http.StatusText(code), id.user)
	}
	if cause != "" {
		msg += "; " + cause
	}
	status.Message = msg
	return &apierrors.StatusError{ErrStatus: status}
}

// uninformative reports whether a Status message says nothing of its own:
// empty, only client-go's "(get configmaps name)" suffix, "unknown", or
// the status text of its code.
func uninformative(msg string, code int) bool {
	m := strings.TrimSpace(msg)
	return m == "" || strings.HasPrefix(m, "(") || m == "unknown" || strings.EqualFold(m, http.StatusText(code))
}

// likelyCause is why the server refuses this identity with code, for the
// identities whose rules kubeadm knows; "" for the others.
func (id identity) likelyCause(code int) string {
	switch {
	case code == http.StatusUnauthorized && id.bootstrapToken:
		return "the cluster does not accept this bootstrap token: it does not exist (deleted, or made for another cluster), it expired, or it lacks the \"authentication\" usage (see kubeadm token list)"
	case code == http.StatusForbidden && id.bootstrapToken:
		return fmt.Sprintf("the token is valid but may not do this: its auth-extra-groups must include %s, and the RBAC rules for bootstrap tokens that \"kubeadm init phase bootstrap-token\" makes must exist", nodeBootstrapTokenGroup)
	case code == http.StatusUnauthorized && id.anonymous:
		return "the API server does not accept anonymous requests (--anonymous-auth=false, or limited to some paths)"
	case code == http.StatusForbidden && id.anonymous:
		return "anonymous requests are allowed only what RBAC grants system:anonymous (kubeadm grants it the kube-public/cluster-info ConfigMap)"
	}
	return ""
}

// describeObject names an object of plural in namespace for a message.
func describeObject(plural, namespace, name string) string {
	s := plural
	if name != "" {
		s += fmt.Sprintf(" %q", name)
	}
	if namespace != "" {
		s += fmt.Sprintf(" in namespace %q", namespace)
	}
	return s
}
