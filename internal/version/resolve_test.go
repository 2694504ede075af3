package version

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder collects the messages a Resolver emits.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// fakeDoer answers from a map of URL -> body without any network access;
// URLs not in the map get a 404. It records every URL asked for.
type fakeDoer struct {
	mu     sync.Mutex
	bodies map[string]string
	asked  []string
}

func (f *fakeDoer) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := req.URL.String()
	f.asked = append(f.asked, u)
	body, ok := f.bodies[u]
	status := http.StatusOK
	if !ok {
		status = http.StatusNotFound
		body = "not found"
	}
	return &http.Response{
		StatusCode: status,
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

func (f *fakeDoer) urls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// errDoer fails every request, like a host without network.
type errDoer struct{ calls int }

func (e *errDoer) Do(*http.Request) (*http.Response, error) {
	e.calls++
	return nil, errors.New("dial tcp: lookup dl.k8s.io: no such host")
}

// stuckDoer ignores the request context and blocks until release is closed.
type stuckDoer struct{ release chan struct{} }

func (s stuckDoer) Do(*http.Request) (*http.Response, error) {
	<-s.release
	return nil, errors.New("released")
}

// testResolver always sets Client so no test can reach the default client
// (and through it the internet).
func testResolver(t *testing.T, client HTTPDoer) (Resolver, *recorder, *recorder) {
	t.Helper()
	if client == nil {
		t.Fatal("tests must inject an HTTP client")
	}
	warn, info := &recorder{}, &recorder{}
	return Resolver{Client: client, Timeout: 5 * time.Second, Warn: warn.add, Info: info.add}, warn, info
}

// labelServer serves label files from a map of path -> body.
func labelServer(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"v1.36.3", "v1.36.3", true},
		{"1.36.3", "v1.36.3", true},
		{"v1.36.0-rc.1", "v1.36.0-rc.1", true},
		{"v1.37.0-alpha.1.123+abcdef", "v1.37.0-alpha.1.123+abcdef", true},
		{"v1.9.0-alpha.1.123_01234567889", "v1.9.0-alpha.1.123_01234567889", true},
		{"0.0.0", "v0.0.0", true},
		{"v1.36", "", false},
		{"v1.x", "", false},
		{"v1.36.", "", false},
		{"v01.36.3", "", false},
		{"v1.036.3", "", false},
		{"vv1.36.3", "", false},
		{"V1.36.3", "", false},
		{"v1.36.3 ", "", false},
		{"v1.36.3/x", "", false},
		{"stable", "", false},
		{"ci/v1.36.3", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := Normalize(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestLabelsAndValidate(t *testing.T) {
	labels := []string{
		"stable", "stable-1", "stable-1.36", "stable-1.9", "latest", "latest-1", "latest-1.36",
		"ci/latest", "ci/latest-1.36", "ci/stable-1", "release/stable", "release/latest-1.36",
	}
	for _, s := range labels {
		if !IsLabel(s) {
			t.Errorf("IsLabel(%q) = false, want true", s)
		}
		if err := Validate(s); err != nil {
			t.Errorf("Validate(%q) = %v", s, err)
		}
	}
	versions := []string{"v1.36.3", "1.36.3", "ci/v1.37.0-alpha.1.123+abcdef", "release/v1.36.3"}
	for _, s := range versions {
		if IsLabel(s) {
			t.Errorf("IsLabel(%q) = true, want false", s)
		}
		if err := Validate(s); err != nil {
			t.Errorf("Validate(%q) = %v", s, err)
		}
	}
	invalid := []string{
		"", "foo", "v1.x", "stable-x", "stable-", "stable-0", "stable-10", "stable-1.0", "stable-1.05",
		"stable-1.100", "stable-1.", "stable-1.36.1", "latest1", "ci/", "ci/foo", "ci-cross/latest",
		"https://dl.k8s.io/release/stable.txt", "release/", "ci/latest/x", " stable",
	}
	for _, s := range invalid {
		if IsLabel(s) {
			t.Errorf("IsLabel(%q) = true, want false", s)
		}
		if err := Validate(s); err == nil {
			t.Errorf("Validate(%q) = nil, want an error", s)
		}
	}
}

func TestIsCIVersion(t *testing.T) {
	for s, want := range map[string]bool{
		"ci/latest":                     true,
		"ci/latest-1.36":                true,
		"ci/v1.37.0-alpha.1.123+abcdef": true,
		"latest":                        false,
		"v1.36.3":                       false,
		"release/stable":                false,
		"ci/":                           false,
		"ci/a b":                        false,
	} {
		if got := IsCIVersion(s); got != want {
			t.Errorf("IsCIVersion(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestResolveConcreteVersionsFetchNothing(t *testing.T) {
	doer := &errDoer{}
	r, warn, _ := testResolver(t, doer)
	for in, want := range map[string]string{
		"v1.36.3":                       "v1.36.3",
		"1.35.0":                        "v1.35.0",
		"v1.36.0-rc.1":                  "v1.36.0-rc.1",
		"ci/v1.37.0-alpha.1.123+abcdef": "v1.37.0-alpha.1.123+abcdef",
		"release/1.36.1":                "v1.36.1",
		"v1.99.0":                       "v1.99.0", // explicit versions are not clamped
	} {
		got, err := r.Resolve(context.Background(), in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if doer.calls != 0 {
		t.Errorf("concrete versions made %d requests, want none", doer.calls)
	}
	if w := warn.all(); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
}

func TestResolveInvalid(t *testing.T) {
	doer := &errDoer{}
	r, _, _ := testResolver(t, doer)
	for _, in := range []string{"foo", "v1.x", "stable-x", "", "ci/foo", "https://dl.k8s.io/release/stable.txt"} {
		got, err := r.Resolve(context.Background(), in)
		if err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", in, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("%q", in)) || !strings.Contains(msg, "stable") || !strings.Contains(msg, "latest") {
			t.Errorf("Resolve(%q) error %q should name the value and the label forms", in, msg)
		}
	}
	if doer.calls != 0 {
		t.Errorf("invalid values made %d requests, want none", doer.calls)
	}
}

func TestResolveLabelsFromServer(t *testing.T) {
	srv := labelServer(t, map[string]string{
		"/release/stable-1.txt":    "v1.36.5\n",
		"/release/stable.txt":      "  v1.36.4  \n",
		"/release/stable-1.35.txt": "v1.35.9",
		"/release/latest-1.36.txt": "v1.36.6-rc.0",
		"/release/latest.txt":      "1.36.1",
		"/ci/latest-1.36.txt":      "v1.36.6-rc.0.17+0123456789abcd",
		"/ci/latest.txt":           "v1.36.4-beta.0.3+fedcba",
	})
	r, warn, info := testResolver(t, srv.Client())
	r.BaseURL = srv.URL
	for in, want := range map[string]string{
		"stable-1":         "v1.36.5",
		"release/stable-1": "v1.36.5",
		"stable":           "v1.36.4",
		"stable-1.35":      "v1.35.9",
		"latest-1.36":      "v1.36.6-rc.0",
		"latest":           "v1.36.1",
		"ci/latest-1.36":   "v1.36.6-rc.0.17+0123456789abcd",
		"ci/latest":        "v1.36.4-beta.0.3+fedcba",
	} {
		got, err := r.Resolve(context.Background(), in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if w := warn.all(); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
	if i := info.all(); len(i) != 0 {
		t.Errorf("unexpected notes: %q", i)
	}
}

func TestResolveDefaultURLs(t *testing.T) {
	doer := &fakeDoer{bodies: map[string]string{
		"https://dl.k8s.io/release/stable-1.txt": "v1.36.3",
		"https://dl.k8s.io/ci/latest-1.36.txt":   "v1.36.4-rc.0.5+abc",
	}}
	r, _, _ := testResolver(t, doer)
	if got, err := r.Resolve(context.Background(), "stable-1"); err != nil || got != "v1.36.3" {
		t.Errorf("stable-1: got %q, %v", got, err)
	}
	if got, err := r.Resolve(context.Background(), "ci/latest-1.36"); err != nil || got != "v1.36.4-rc.0.5+abc" {
		t.Errorf("ci/latest-1.36: got %q, %v", got, err)
	}
	want := []string{"https://dl.k8s.io/release/stable-1.txt", "https://dl.k8s.io/ci/latest-1.36.txt"}
	if got := doer.urls(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requested %q, want %q", got, want)
	}
}

func TestResolveClampsNewerRelease(t *testing.T) {
	doer := &fakeDoer{bodies: map[string]string{
		"https://dl.k8s.io/release/stable.txt":      "v1.39.1",
		"https://dl.k8s.io/release/stable-1.37.txt": "v1.37.7",
		"https://dl.k8s.io/ci/latest.txt":           "v1.38.0-alpha.2.40+abc",
		"https://dl.k8s.io/release/latest-2.txt":    "v2.0.0",
	}}
	r, warn, info := testResolver(t, doer)
	for _, in := range []string{"stable", "ci/latest", "latest-2"} {
		got, err := r.Resolve(context.Background(), in)
		if err != nil || got != "v1.37.7" {
			t.Errorf("Resolve(%q) = %q, %v; want v1.37.7", in, got, err)
		}
	}
	notes := info.all()
	if len(notes) != 3 || !strings.Contains(notes[0], `"stable-1.37"`) || !strings.Contains(notes[0], "v1.39.1") {
		t.Errorf("clamping notes = %q", notes)
	}
	if w := warn.all(); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
}

func TestResolveClampUsesClientVersion(t *testing.T) {
	doer := &fakeDoer{bodies: map[string]string{
		"https://dl.k8s.io/release/stable.txt":      "v1.36.2",
		"https://dl.k8s.io/release/stable-1.35.txt": "v1.35.8",
	}}
	r, _, _ := testResolver(t, doer)
	r.ClientVersion = "v1.35.4"
	if got, err := r.Resolve(context.Background(), "stable"); err != nil || got != "v1.35.8" {
		t.Errorf("got %q, %v; want v1.35.8", got, err)
	}
}

func TestResolveClampHappensOnlyOnce(t *testing.T) {
	doer := &fakeDoer{bodies: map[string]string{
		"https://dl.k8s.io/release/stable.txt":      "v1.39.1",
		"https://dl.k8s.io/release/stable-1.37.txt": "v1.38.0", // inconsistent server
	}}
	r, _, _ := testResolver(t, doer)
	got, err := r.Resolve(context.Background(), "stable")
	if err == nil || !strings.Contains(err.Error(), "v1.38.0") {
		t.Fatalf("got %q, %v; want an error about v1.38.0", got, err)
	}
	if n := len(doer.urls()); n != 2 {
		t.Errorf("made %d requests, want 2", n)
	}
}

func TestResolveClampFallsBackWhenSecondLookupFails(t *testing.T) {
	doer := &fakeDoer{bodies: map[string]string{
		"https://dl.k8s.io/release/stable.txt": "v1.38.1",
	}}
	r, warn, _ := testResolver(t, doer)
	got, err := r.Resolve(context.Background(), "stable")
	if err != nil || got != KubernetesVersion {
		t.Fatalf("got %q, %v; want %s", got, err, KubernetesVersion)
	}
	if w := warn.all(); len(w) != 2 || !strings.Contains(w[0], "404") {
		t.Errorf("warnings = %q", w)
	}
}

func TestResolveFallsBackWithoutNetwork(t *testing.T) {
	for _, label := range []string{"stable-1", "stable", "latest", "latest-1.37", "ci/latest"} {
		doer := &errDoer{}
		r, warn, _ := testResolver(t, doer)
		got, err := r.Resolve(context.Background(), label)
		if err != nil || got != KubernetesVersion {
			t.Errorf("Resolve(%q) = %q, %v; want %s", label, got, err, KubernetesVersion)
			continue
		}
		w := warn.all()
		if len(w) != 2 {
			t.Errorf("Resolve(%q) warnings = %q, want two", label, w)
			continue
		}
		if want := fmt.Sprintf("unable to look up Kubernetes version %q online: ", label); !strings.HasPrefix(w[0], want) ||
			!strings.Contains(w[0], "no such host") {
			t.Errorf("first warning = %q", w[0])
		}
		if want := "using the Kubernetes version this binary was built for instead: " + KubernetesVersion; w[1] != want {
			t.Errorf("second warning = %q, want %q", w[1], want)
		}
	}
}

func TestResolveFallsBackOnErrorStatus(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadGateway, http.StatusForbidden} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "nope", status)
		}))
		r, warn, _ := testResolver(t, srv.Client())
		r.BaseURL = srv.URL
		got, err := r.Resolve(context.Background(), "stable-1")
		srv.Close()
		if err != nil || got != KubernetesVersion {
			t.Errorf("status %d: got %q, %v; want fallback", status, got, err)
			continue
		}
		if w := warn.all(); len(w) != 2 || !strings.Contains(w[0], fmt.Sprint(status)) {
			t.Errorf("status %d: warnings = %q", status, w)
		}
	}
}

func TestResolveFallbackUsesReleaseBaseline(t *testing.T) {
	cases := map[string]string{
		"":                            KubernetesVersion,
		"v1.36.3":                     "v1.36.3",
		"v1.36.3+build":               "v1.36.3",
		"v1.36.4-beta.0.12+abcdef":    "v1.36.3",
		"v1.37.0-alpha.1.123+abcdef":  "v1.37.0-alpha.1",
		"v1.37.0-rc.2":                "v1.37.0-rc.2",
		"v1.37.0-alpha":               "v1.37.0-alpha.0",
		"v1.37.0-beta.0.5-dirty+abcd": "v1.37.0-beta.0",
	}
	for client, want := range cases {
		r, _, _ := testResolver(t, &errDoer{})
		r.ClientVersion = client
		got, err := r.Resolve(context.Background(), "stable-1")
		if err != nil || got != want {
			t.Errorf("client %q: got %q, %v; want %q", client, got, err, want)
		}
	}
}

func TestResolveUnusableClientVersion(t *testing.T) {
	r, warn, _ := testResolver(t, &errDoer{})
	r.ClientVersion = "not-a-version"
	got, err := r.Resolve(context.Background(), "stable-1")
	if err != nil || got != KubernetesVersion {
		t.Errorf("offline: got %q, %v; want %s", got, err, KubernetesVersion)
	}
	if w := warn.all(); len(w) != 2 || !strings.Contains(w[1], "not-a-version") {
		t.Errorf("offline warnings = %q", w)
	}

	doer := &fakeDoer{bodies: map[string]string{"https://dl.k8s.io/release/stable-1.txt": "v1.40.0"}}
	r, warn, _ = testResolver(t, doer)
	r.ClientVersion = "not-a-version"
	got, err = r.Resolve(context.Background(), "stable-1")
	if err != nil || got != "v1.40.0" {
		t.Errorf("online: got %q, %v; want v1.40.0 unclamped", got, err)
	}
	if w := warn.all(); len(w) != 1 {
		t.Errorf("online warnings = %q, want one", w)
	}
}

func TestResolveInvalidBody(t *testing.T) {
	for _, body := range []string{"", "<html>captive portal</html>", "stable-1.36", "v1.36", strings.Repeat("v1.36.3", 1000)} {
		srv := labelServer(t, map[string]string{"/release/stable-1.txt": body})
		r, warn, _ := testResolver(t, srv.Client())
		r.BaseURL = srv.URL
		got, err := r.Resolve(context.Background(), "stable-1")
		if err == nil {
			t.Errorf("body %.20q: got %q, want an error", body, got)
			continue
		}
		if len(body) <= maxVersionFileSize {
			if !strings.Contains(err.Error(), `"stable-1"`) || !strings.Contains(err.Error(), fmt.Sprintf("%q", body)) {
				t.Errorf("body %q: error %q should name the label and the body", body, err)
			}
		}
		if w := warn.all(); len(w) != 0 {
			t.Errorf("body %.20q: unexpected warnings %q", body, w)
		}
	}
}

func TestResolveTimeoutSlowServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close

	r, warn, _ := testResolver(t, srv.Client())
	r.BaseURL = srv.URL
	r.Timeout = 50 * time.Millisecond
	start := time.Now()
	got, err := r.Resolve(context.Background(), "stable-1")
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Resolve took %v with a 50ms timeout", elapsed)
	}
	if err != nil || got != KubernetesVersion {
		t.Fatalf("got %q, %v; want fallback to %s", got, err, KubernetesVersion)
	}
	if w := warn.all(); len(w) != 2 || !strings.Contains(w[0], "deadline") {
		t.Errorf("warnings = %q", w)
	}
}

func TestResolveTimeoutClientIgnoringContext(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r, warn, _ := testResolver(t, stuckDoer{release: release})
	r.Timeout = 30 * time.Millisecond
	start := time.Now()
	got, err := r.Resolve(context.Background(), "latest")
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Resolve took %v with a 30ms timeout", elapsed)
	}
	if err != nil || got != KubernetesVersion {
		t.Fatalf("got %q, %v; want fallback", got, err)
	}
	if w := warn.all(); len(w) != 2 {
		t.Errorf("warnings = %q", w)
	}
}

func TestResolveCallerCancellationIsAnError(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r, warn, _ := testResolver(t, stuckDoer{release: release})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	got, err := r.Resolve(ctx, "stable-1")
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %q, %v; want a cancellation error", got, err)
	}
	if w := warn.all(); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
}

func TestResolveNilWarnIsSafe(t *testing.T) {
	r := Resolver{Client: &errDoer{}}
	if got, err := r.Resolve(context.Background(), "stable"); err != nil || got != KubernetesVersion {
		t.Errorf("got %q, %v", got, err)
	}
}
