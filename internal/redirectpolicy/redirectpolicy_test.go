package redirectpolicy

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestPolicies(t *testing.T) {
	tests := []struct {
		name        string
		chain       []string // the original URL first, the redirect's target last
		sameHost    bool     // SameHost allows it
		noDowngrade bool     // NoDowngrade allows it
	}{
		{"same host, https", []string{"https://a.example:8443/x", "https://a.example:8443/y"}, true, true},
		{"same host, default port spelt out", []string{"https://A.example/x", "https://a.example:443/y"}, true, true},
		{"https to http, same host", []string{"https://a.example/x", "http://a.example/y"}, false, false},
		{"https to another host", []string{"https://dl.example/x", "https://cdn.example/y"}, false, true},
		{"https to another port", []string{"https://a.example:6443/x", "https://a.example:6444/y"}, false, true},
		{"http to https, same host", []string{"http://a.example/x", "https://a.example/y"}, false, true},
		{"http to http, same host", []string{"http://127.0.0.1:10248/x", "http://127.0.0.1:10248/y"}, true, true},
		{"back to http after a hop", []string{"https://a.example/x", "https://a.example/y", "http://a.example/z"}, false, false},
		{"too many", append(make([]string, 0, 12), "https://a.example/0", "https://a.example/1", "https://a.example/2", "https://a.example/3",
			"https://a.example/4", "https://a.example/5", "https://a.example/6", "https://a.example/7", "https://a.example/8",
			"https://a.example/9", "https://a.example/10"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var via []*http.Request
			for _, u := range tt.chain[:len(tt.chain)-1] {
				via = append(via, request(t, u))
			}
			req := request(t, tt.chain[len(tt.chain)-1])
			for _, p := range []struct {
				name  string
				check func(*http.Request, []*http.Request) error
				allow bool
			}{{"SameHost", SameHost, tt.sameHost}, {"NoDowngrade", NoDowngrade, tt.noDowngrade}} {
				err := p.check(req, via)
				switch {
				case p.allow && err != nil:
					t.Errorf("%s: %v", p.name, err)
				case !p.allow && !errors.Is(err, ErrRefused):
					t.Errorf("%s: %v, want a refusal", p.name, err)
				case !p.allow && !strings.Contains(err.Error(), tt.chain[0]):
					t.Errorf("%s: %q does not name the URL asked for", p.name, err)
				}
			}
		})
	}
}

func request(t *testing.T, raw string) *http.Request {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Request{URL: u}
}
