package boundedread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
)

// The limits; see the package documentation for what each one covers.
const (
	// MaxFile caps any file kubeadm reads.
	MaxFile int64 = 10 << 20
	// MaxUnverified caps a document read before its server is verified,
	// and a discovery document.
	MaxUnverified int64 = 2 << 20
	// MaxAPIResponse caps one response body of a verified API server.
	MaxAPIResponse int64 = 64 << 20
)

// ErrTooLarge is what every *TooLargeError matches with errors.Is.
var ErrTooLarge = errors.New("larger than the size limit")

// TooLargeError says that Source holds more than Limit bytes.
type TooLargeError struct {
	// Source names what was read: a file's path, or a request.
	Source string
	// Limit is the most that was to be read, in bytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s, the most kubeadm reads of it", e.Source, Size(e.Limit))
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Size writes n bytes for people: "10 MiB", "512 KiB", "1000 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// ReadFile reads the file at path, which must hold at most limit bytes.
// A regular file that is too large is refused before it is read; any other
// file (a pipe, a file under /proc) is read up to one byte past the limit.
// Errors of the file system are returned as os.ReadFile returns them
// (naming the path).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > limit {
			return nil, &TooLargeError{Source: path, Limit: limit}
		}
		size = fi.Size()
	}
	return read(f, limit, path, size)
}

// ReadAll reads r to its end, which must come within limit bytes; source
// names r in the error when it does not. Errors of r are returned as they
// are.
func ReadAll(r io.Reader, limit int64, source string) ([]byte, error) {
	return read(r, limit, source, 0)
}

// read reads r up to one byte past limit, into a buffer sized for hint
// bytes.
func read(r io.Reader, limit int64, source string, hint int64) ([]byte, error) {
	var buf bytes.Buffer
	// Room for the expected size and the read that finds the end, so that
	// a file of known size is read without growing the buffer.
	buf.Grow(int(min(hint, limit)) + bytes.MinRead)
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, &TooLargeError{Source: source, Limit: limit}
	}
	return buf.Bytes(), nil
}

// Transport returns a wrapper of HTTP transports, for
// rest.Config.Wrap, that caps every response body at limit bytes: a
// response whose declared length is over the limit is refused at once, and
// reading any other body past the limit fails with a *TooLargeError naming
// the request.
func Transport(limit int64) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &cappedTransport{next: rt, limit: limit}
	}
}

// cappedTransport caps the response bodies of next.
type cappedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	tooLarge := &TooLargeError{Source: "the answer to " + req.Method + " " + req.URL.Redacted(), Limit: t.limit}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, tooLarge
	}
	resp.Body = &cappedBody{body: resp.Body, left: t.limit, tooLarge: tooLarge}
	return resp, nil
}

// WrappedRoundTripper lets client-go's helpers reach the transport below.
func (t *cappedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// CloseIdleConnections closes the idle connections of the transport below,
// so that http.Client.CloseIdleConnections reaches it.
func (t *cappedTransport) CloseIdleConnections() { closeIdleConnections(t.next) }

// closeIdleConnections closes the idle connections of rt or, when it does
// not offer to, of the transport it wraps (client-go's wrappers say which
// with WrappedRoundTripper).
func closeIdleConnections(rt http.RoundTripper) {
	switch rt := rt.(type) {
	case interface{ CloseIdleConnections() }:
		rt.CloseIdleConnections()
	case interface{ WrappedRoundTripper() http.RoundTripper }:
		closeIdleConnections(rt.WrappedRoundTripper())
	}
}

// cappedBody is a response body that fails once more than left bytes
// would be read.
type cappedBody struct {
	body     io.ReadCloser
	left     int64 // bytes still allowed; -1 once the limit is passed
	tooLarge error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge
	}
	// Read at most one byte past what is allowed, to see whether the
	// body goes on.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = -1
		return n, b.tooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }
