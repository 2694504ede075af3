package version

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// Values accepted by --kubernetes-version / kubernetesVersion
//
// A value is either a concrete version or a release label, optionally
// preceded by a bucket prefix:
//
//	v1.36.3, 1.36.3, v1.36.0-rc.1     a concrete version ("v" is added if missing)
//	stable, stable-1, stable-1.36     a release label, looked up online
//	latest, latest-1, latest-1.36     likewise
//	ci/latest, ci/latest-1.36         a label looked up in the CI bucket
//	ci/v1.37.0-alpha.1.123+abcdef     a concrete CI build; nothing is fetched
//	release/stable                    same as "stable" (explicit default bucket)
//
// A label is turned into a version by downloading
// <base>/<bucket>/<label>.txt (base is https://dl.k8s.io, bucket is
// "release" or "ci"), whose body is the version. Full URLs are not accepted,
// in line with upstream kubeadm.

const (
	// DefaultResolveTimeout bounds a whole Resolve call when the Resolver
	// does not set its own Timeout.
	DefaultResolveTimeout = 10 * time.Second

	// DefaultReleaseBaseURL is the server that publishes the label files.
	DefaultReleaseBaseURL = "https://dl.k8s.io"

	// maxVersionFileSize caps how much of a label file is read. Real files
	// hold a single short line.
	maxVersionFileSize = 4 << 10

	bucketRelease = "release"
	bucketCI      = "ci"
)

// HTTPDoer is the part of *http.Client that Resolver needs.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Resolver turns a --kubernetes-version value into a concrete version. The
// zero value is ready to use. A Resolver holds no state between calls.
type Resolver struct {
	// Client performs the label lookups. Nil means a fresh *http.Client
	// (honouring the proxy environment variables) with Timeout applied.
	// Redirects from https to another scheme are refused, unless Client is
	// an *http.Client with its own CheckRedirect.
	Client HTTPDoer

	// Timeout bounds the whole Resolve call, including a second lookup
	// when the answer has to be clamped. Zero means DefaultResolveTimeout.
	// Resolve never waits longer than this, even if Client ignores the
	// request context.
	Timeout time.Duration

	// Warn receives warnings, such as the notice that the lookup failed and
	// the local version is used instead. Nil discards them.
	Warn func(format string, args ...any)

	// Info receives informational notes, such as the notice that a label
	// was clamped to this binary's minor release. Nil discards them.
	Info func(format string, args ...any)

	// ClientVersion is the version of this binary used as the fallback and
	// as the upper bound for labels. Empty means KubernetesVersion.
	ClientVersion string

	// BaseURL replaces DefaultReleaseBaseURL when set (no trailing slash
	// needed).
	BaseURL string
}

// Resolve returns the concrete version ("v" prefixed) that versionOrLabel
// stands for.
//
// Concrete versions, including "ci/<version>", are returned normalized and
// nothing is fetched. Labels are looked up online, and:
//
//   - when the lookup fails (no network, an error status, a timeout), a
//     warning is emitted and this binary's own version is returned, whatever
//     the label was;
//   - when the answer belongs to a newer minor (or major) release than this
//     binary, the label "stable-<major>.<minor>" of this binary's release
//     line is looked up instead, so a binary is never asked to deploy a
//     release newer than the one it was built for;
//   - when the answer is not a version, an error is returned.
//
// If ctx is cancelled by the caller, Resolve returns an error rather than
// falling back.
func (r Resolver) Resolve(ctx context.Context, versionOrLabel string) (string, error) {
	if v, ok := Normalize(versionOrLabel); ok {
		return v, nil
	}
	bucket, name, ok := splitBucket(versionOrLabel)
	if !ok {
		return "", invalidValueError(versionOrLabel)
	}
	if v, ok := Normalize(name); ok {
		return v, nil
	}
	if !isReleaseLabel(name) {
		return "", invalidValueError(versionOrLabel)
	}

	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	bounded, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	l := lookup{r: r, caller: ctx, ctx: bounded, timeout: timeout}
	return l.resolveLabel(versionOrLabel, bucket, name, true)
}

// Validate reports whether s is acceptable as a --kubernetes-version value,
// without fetching anything.
func Validate(s string) error {
	if _, ok := Normalize(s); ok {
		return nil
	}
	if _, name, ok := splitBucket(s); ok {
		if _, ok := Normalize(name); ok || isReleaseLabel(name) {
			return nil
		}
	}
	return invalidValueError(s)
}

// IsLabel reports whether s is a release label (such as "stable",
// "latest-1.36" or "ci/latest") that has to be looked up online.
func IsLabel(s string) bool {
	_, name, ok := splitBucket(s)
	return ok && isReleaseLabel(name)
}

// IsCIVersion reports whether s refers to the CI bucket, either as a label
// ("ci/latest") or as a concrete CI build ("ci/v1.37.0-alpha.1.123+abc").
// Such versions are served from the CI image repository.
func IsCIVersion(s string) bool {
	bucket, _, ok := splitBucket(s)
	return ok && bucket == bucketCI
}

// Normalize reports whether s is a concrete version without a bucket prefix
// and, if so, returns it with a leading "v".
//
// The check is the permissive one kubeadm applies to this flag: MAJOR and
// MINOR are decimal numbers without leading zeros, PATCH starts with a
// digit, and whatever follows may only use letters, digits and "-_.+".
// Stricter semantic-version parsing happens where the version is used.
func Normalize(s string) (string, bool) {
	rest := strings.TrimPrefix(s, "v")
	for range 2 {
		n := numberLen(rest)
		if n == 0 || (n > 1 && rest[0] == '0') || n == len(rest) || rest[n] != '.' {
			return "", false
		}
		rest = rest[n+1:]
	}
	if rest == "" || !isDigit(rest[0]) || !allTokenChars(rest) {
		return "", false
	}
	return "v" + strings.TrimPrefix(s, "v"), true
}

// lookup carries the per-call state of one Resolve.
type lookup struct {
	r       Resolver
	caller  context.Context // the context Resolve was given
	ctx     context.Context // caller's context plus the timeout
	timeout time.Duration
}

// resolveLabel fetches the label name from bucket. original is the value as
// the user wrote it, for messages. mayClamp is false for the second lookup
// made after clamping, so a misbehaving server cannot cause a loop.
func (l lookup) resolveLabel(original, bucket, name string, mayClamp bool) (string, error) {
	own, ownErr := releaseBaseline(l.r.ClientVersion)

	fileURL := strings.TrimSuffix(l.baseURL(), "/") + "/" + bucket + "/" + name + ".txt"
	body, fetchErr := l.fetch(fileURL)

	// An answer too large to be a version file is, like any other
	// malformed answer, an error and not a reason to fall back.
	if errors.Is(fetchErr, boundedread.ErrTooLarge) {
		return "", fmt.Errorf("resolving Kubernetes version %q: %w", original, fetchErr)
	}
	if fetchErr != nil {
		if err := l.caller.Err(); err != nil {
			return "", fmt.Errorf("resolving Kubernetes version %q was interrupted: %w", original, err)
		}
		l.warn("unable to look up Kubernetes version %q online: %v", original, fetchErr)
		if ownErr != nil {
			l.warn("this binary's own version is unusable (%v); using the built-in default %s", ownErr, KubernetesVersion)
			return KubernetesVersion, nil
		}
		l.warn("using the Kubernetes version this binary was built for instead: %s", own)
		return own, nil
	}

	remote, ok := Normalize(body)
	if !ok {
		return "", fmt.Errorf("resolving Kubernetes version %q: %s returned %q, which is not a Kubernetes version", original, fileURL, body)
	}
	if ownErr != nil {
		l.warn("this binary's own version is unusable (%v); using %s as published online without comparing it", ownErr, remote)
		return remote, nil
	}

	remoteV, err := utilversion.ParseGeneric(remote)
	if err != nil {
		return "", fmt.Errorf("resolving Kubernetes version %q: cannot parse %q from %s: %w", original, remote, fileURL, err)
	}
	ownV, err := utilversion.ParseSemantic(own)
	if err != nil {
		return "", fmt.Errorf("resolving Kubernetes version %q: cannot parse this binary's version %q: %w", original, own, err)
	}
	if remoteV.Major() > ownV.Major() || (remoteV.Major() == ownV.Major() && remoteV.Minor() > ownV.Minor()) {
		line := fmt.Sprintf("stable-%d.%d", ownV.Major(), ownV.Minor())
		if !mayClamp {
			return "", fmt.Errorf("resolving Kubernetes version %q: %s returned %s, which is newer than the v%d.%d release line it was asked for",
				original, fileURL, remote, ownV.Major(), ownV.Minor())
		}
		l.info("%q currently points to %s, newer than the v%d.%d release this binary supports; looking up %q instead",
			original, remote, ownV.Major(), ownV.Minor(), line)
		return l.resolveLabel(line, bucketRelease, line, false)
	}
	return remote, nil
}

// fetch downloads fileURL and returns its trimmed body. It returns no later
// than l.ctx's deadline even if the HTTP client ignores the context.
func (l lookup) fetch(fileURL string) (string, error) {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, fileURL, nil)
	if err != nil {
		return "", fmt.Errorf("building request for %s: %w", fileURL, err)
	}
	// dl.k8s.io answers through a CDN on another host: a redirect to any
	// https host will do, one to plain http will not. An *http.Client
	// given without a redirect policy gets this one.
	client := l.r.Client
	switch c := client.(type) {
	case nil:
		client = &http.Client{Timeout: l.timeout, CheckRedirect: redirectpolicy.NoDowngrade}
	case *http.Client:
		if c.CheckRedirect == nil {
			withPolicy := *c
			withPolicy.CheckRedirect = redirectpolicy.NoDowngrade
			client = &withPolicy
		}
	}

	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1) // buffered: a late sender never blocks
	go func() {
		body, err := get(client, req)
		done <- result{body, err}
	}()

	select {
	case res := <-done:
		return res.body, res.err
	case <-l.ctx.Done():
		return "", fmt.Errorf("no answer from %s: %w", fileURL, l.ctx.Err())
	}
}

// get performs req and reads a bounded, successful response body.
func get(client HTTPDoer, req *http.Request) (string, error) {
	resp, err := client.Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			return "", err // already names the URL
		}
		return "", fmt.Errorf("requesting %s: %w", req.URL, err)
	}
	if resp == nil || resp.Body == nil {
		return "", fmt.Errorf("requesting %s: empty response", req.URL)
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("requesting %s: server answered %q", req.URL, resp.Status)
	}
	data, err := boundedread.ReadAll(resp.Body, maxVersionFileSize, "the answer of "+req.URL.String())
	if errors.Is(err, boundedread.ErrTooLarge) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", req.URL, err)
	}
	return strings.TrimSpace(string(data)), nil
}

func (l lookup) baseURL() string {
	if l.r.BaseURL != "" {
		return l.r.BaseURL
	}
	return DefaultReleaseBaseURL
}

func (l lookup) warn(format string, args ...any) {
	if l.r.Warn != nil {
		l.r.Warn(format, args...)
	}
}

func (l lookup) info(format string, args ...any) {
	if l.r.Info != nil {
		l.r.Info(format, args...)
	}
}

// releaseBaseline derives, from this binary's version, the published
// release it corresponds to: build metadata is dropped; a development build
// after a patch release (v1.36.3-beta.0.12+abc) maps to the previous patch
// release (v1.36.2); a pre-release keeps only its first two identifiers
// (v1.37.0-alpha.1.123+abc → v1.37.0-alpha.1, v1.37.0-alpha → v1.37.0-alpha.0).
// Empty means KubernetesVersion.
func releaseBaseline(clientVersion string) (string, error) {
	if clientVersion == "" {
		clientVersion = KubernetesVersion
	}
	v, err := utilversion.ParseSemantic(clientVersion)
	if err != nil {
		return "", fmt.Errorf("cannot parse %q: %w", clientVersion, err)
	}
	pre, patch := v.PreRelease(), v.Patch()
	switch {
	case pre == "":
	case patch > 0:
		pre, patch = "", patch-1
	default:
		ids := strings.Split(pre, ".")
		if len(ids) == 1 {
			ids = append(ids, "0")
		}
		pre = ids[0] + "." + ids[1]
	}
	out := fmt.Sprintf("v%d.%d.%d", v.Major(), v.Minor(), patch)
	if pre != "" {
		out += "-" + pre
	}
	return out, nil
}

// splitBucket separates an optional "ci/" or "release/" prefix from the
// rest of s. The rest must be non-empty and use only letters, digits and
// "-_.+".
func splitBucket(s string) (bucket, rest string, ok bool) {
	bucket, rest = bucketRelease, s
	if after, found := strings.CutPrefix(s, bucketCI+"/"); found {
		bucket, rest = bucketCI, after
	} else if after, found := strings.CutPrefix(s, bucketRelease+"/"); found {
		rest = after
	}
	if rest == "" || !allTokenChars(rest) {
		return "", "", false
	}
	return bucket, rest, true
}

// isReleaseLabel reports whether name is "stable" or "latest", optionally
// followed by "-MAJOR" (1-9) or "-MAJOR.MINOR" (MINOR 1-99, no leading zero).
func isReleaseLabel(name string) bool {
	var rest string
	switch {
	case strings.HasPrefix(name, "stable"):
		rest = name[len("stable"):]
	case strings.HasPrefix(name, "latest"):
		rest = name[len("latest"):]
	default:
		return false
	}
	if rest == "" {
		return true
	}
	if len(rest) < 2 || rest[0] != '-' || rest[1] < '1' || rest[1] > '9' {
		return false
	}
	minor, hasMinor := strings.CutPrefix(rest[2:], ".")
	switch {
	case rest[2:] == "":
		return true
	case !hasMinor:
		return false
	}
	return len(minor) >= 1 && len(minor) <= 2 && numberLen(minor) == len(minor) && minor[0] != '0'
}

func invalidValueError(s string) error {
	return fmt.Errorf("invalid Kubernetes version %q: expected a version such as v1.36.3 or a release label "+
		"(stable, stable-1, stable-1.36, latest, latest-1, latest-1.36), optionally prefixed by \"ci/\" or \"release/\"", s)
}

func numberLen(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allTokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '-' && c != '_' && c != '.' && c != '+' {
			return false
		}
	}
	return true
}
