package apiclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/tokenformat"
)

// nodeBootstrapTokenGroup is the group kubeadm's bootstrap tokens carry,
// which its RBAC rules for joining nodes name.
const nodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

// ExplainRefusals returns a wrapper of a client's transport (for
// rest.Config.Wrap) that rewrites an API error answer with no message of
// its own (an empty body or a bare Status, as a proxy in the way or a
// server cut short answers, or just "Unauthorized") into a Status that
// says what was refused, to whom and, for bootstrap tokens and anonymous
// clients, the likely cause; to a 401 or 403 for those two, with the
// server's own message, it adds the likely cause. The identity is the one
// cfg authenticates as, never a secret (a bootstrap token shows its public
// ID). The code and reason stay, so apierrors.IsForbidden and the like
// answer as before; every other answer passes untouched. Every clientset
// this package makes has it; token discovery puts it under its own.
func ExplainRefusals(cfg *rest.Config) func(http.RoundTripper) http.RoundTripper {
	creds := credentialsOf(cfg)
	return func(next http.RoundTripper) http.RoundTripper {
		return &explainingTransport{next: next, creds: creds}
	}
}

// explainingTransport is ExplainRefusals' wrapper.
type explainingTransport struct {
	next  http.RoundTripper
	creds credentials
}

func (t *explainingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	body, err := boundedread.ReadAll(resp.Body, boundedread.MaxAPIResponse, "the answer to "+req.Method+" "+req.URL.Path)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	verb, what := describeRequest(req)
	status, changed := t.creds.explain(answerStatus(req, resp, body), verb, what)
	if !changed {
		return resp, nil
	}
	// A Status, which client-go reads into the error whole; outside the
	// API groups (/version, /livez) client-go's discovery client cannot
	// decode one, and takes the message of a 403 from plain text.
	b, contentType := []byte(status.Message), "text/plain; charset=utf-8"
	if parseResourcePath(req.URL).resource != "" {
		if b, err = json.Marshal(status); err != nil {
			return resp, nil
		}
		contentType = "application/json"
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", contentType)
	resp.Header.Del("Content-Length")
	return resp, nil
}

// WrappedRoundTripper lets client-go find the transport under this one.
func (t *explainingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// answerStatus is the Status client-go makes of an error answer: the
// answer itself when it is one, else the one it makes of a body that is
// not (see apierrors.NewGenericServerResponse).
func answerStatus(req *http.Request, resp *http.Response, body []byte) metav1.Status {
	var status metav1.Status
	if err := json.Unmarshal(body, &status); err == nil && status.Status != "" {
		return status
	}
	r := parseResourcePath(req.URL)
	retryAfter, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return apierrors.NewGenericServerResponse(resp.StatusCode, req.Method, schema.GroupResource{Group: r.group, Resource: r.resource},
		r.name, strings.TrimSpace(string(body)), retryAfter, true).ErrStatus
}

// resourcePath is a request's path taken apart: an API resource (empty
// for other paths, as /version).
type resourcePath struct {
	group, resource, namespace, name string
}

// parseResourcePath takes apart
//
//	/api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]]
//	/apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]]
func parseResourcePath(u *url.URL) resourcePath {
	var r resourcePath
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group, parts = parts[1], parts[3:]
	default:
		return resourcePath{}
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, parts = parts[1], parts[2:]
	}
	r.resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	return r
}

// describeRequest names what req does, for a message: its verb and its
// object ("get", `configmaps "x" in namespace "y"`), or its path for a
// path outside the API groups ("get", "/version").
func describeRequest(req *http.Request) (verb, what string) {
	r := parseResourcePath(req.URL)
	if r.resource == "" {
		return strings.ToLower(req.Method), req.URL.Path
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case r.name == "":
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb, r.name = "create", createdName(req)
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, describeObject(r.resource, r.namespace, r.name)
}

// createdName is the name of the object a create request sends, when its
// body can be read again and names one.
func createdName(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	rc, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer rc.Close()
	body, err := boundedread.ReadAll(rc, boundedread.MaxAPIResponse, "the body of "+req.Method+" "+req.URL.Path)
	if err != nil {
		return ""
	}
	var obj metav1.PartialObjectMetadata
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	return obj.Name
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
		if b, err := boundedread.ReadFile(c.bearerTokenFile, boundedread.MaxFile); err == nil {
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
			data, _ = boundedread.ReadFile(c.certFile, boundedread.MaxFile)
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

// explain returns status, an API server's answer to verb on what, with a
// message that says what was refused, to whom, and why it likely was,
// when the answer carried no message of its own; a 401 or 403 to a
// bootstrap token or an anonymous client also gets the likely cause after
// the server's own message. changed is false when status is left as it
// is.
func (c credentials) explain(status metav1.Status, verb, what string) (out metav1.Status, changed bool) {
	code := int(status.Code)
	empty := uninformative(status.Message, code)
	id := c.identity()
	cause := id.likelyCause(code)
	if !empty && cause == "" {
		return status, false
	}
	msg := status.Message
	if empty {
		msg = fmt.Sprintf("%s %s: the server answered %d %s without a reason, to %s", verb, what, code, http.StatusText(code), id.user)
	}
	if cause != "" {
		msg += "; " + cause
	}
	status.Message = msg
	status.Kind, status.APIVersion = "Status", "v1"
	return status, true
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
