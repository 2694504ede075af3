package redirectpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects one request may follow, as many as
// Go's default policy allows.
const MaxRedirects = 10

// ErrRefused is wrapped by the error of every refused redirect.
var ErrRefused = errors.New("redirect refused")

// SameHost allows a redirect only to the host and port of the original
// request and, when that was https, only to https.
func SameHost(req *http.Request, via []*http.Request) error {
	if err := NoDowngrade(req, via); err != nil {
		return err
	}
	from := via[0].URL
	if origin(from) != origin(req.URL) {
		return fmt.Errorf("%w: %s sends to %s, another host", ErrRefused, from.Redacted(), req.URL.Redacted())
	}
	return nil
}

// NoDowngrade allows a redirect anywhere except, when the original request
// was https, to another scheme.
func NoDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	from := via[0].URL
	if len(via) >= MaxRedirects {
		return fmt.Errorf("%w: %s: stopped after %d redirects", ErrRefused, from.Redacted(), MaxRedirects)
	}
	if strings.EqualFold(from.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return fmt.Errorf("%w: %s sends to %s, which is not https", ErrRefused, from.Redacted(), req.URL.Redacted())
	}
	return nil
}

// origin is u's scheme-independent host and port, the port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
