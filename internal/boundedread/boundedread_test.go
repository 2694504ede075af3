package boundedread

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int64) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, bytes.Repeat([]byte("x"), int(size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A large file that takes no room: refused on its size alone.
	if err := os.Truncate(sparse, 1<<40); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		limit    int64
		wantLen  int
		tooLarge bool
		wantErr  bool
	}{
		{name: "empty", path: write("empty", 0), limit: 10, wantLen: 0},
		{name: "under the limit", path: write("under", 9), limit: 10, wantLen: 9},
		{name: "at the limit", path: write("at", 10), limit: 10, wantLen: 10},
		{name: "one byte over", path: write("over", 11), limit: 10, tooLarge: true},
		{name: "sparse terabyte", path: sparse, limit: MaxFile, tooLarge: true},
		{name: "pipe", path: pipe(t, dir, 3<<20), limit: 1 << 20, tooLarge: true},
		{name: "missing", path: filepath.Join(dir, "absent"), limit: 10, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := ReadFile(tt.path, tt.limit)
			switch {
			case tt.tooLarge:
				var tl *TooLargeError
				if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
					t.Fatalf("error %v, want a *TooLargeError", err)
				}
				if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), Size(tt.limit)) {
					t.Errorf("error %q does not name the file and the limit", err)
				}
			case tt.wantErr:
				if err == nil || errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tt.path) {
					t.Errorf("error %v, want one naming %s", err, tt.path)
				}
			case err != nil:
				t.Fatal(err)
			case len(data) != tt.wantLen:
				t.Errorf("read %d bytes, want %d", len(data), tt.wantLen)
			}
		})
	}
}

func TestReadAll(t *testing.T) {
	if b, err := ReadAll(strings.NewReader("abc"), 3, "three"); err != nil || string(b) != "abc" {
		t.Errorf("ReadAll = %q, %v", b, err)
	}
	// An endless reader is read one byte past the limit, no further.
	r := &countingReader{}
	_, err := ReadAll(r, 1000, "the stream")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the stream is larger than 1000 bytes") {
		t.Errorf("error %v", err)
	}
	if r.n != 1001 {
		t.Errorf("read %d bytes of an endless stream, want 1001", r.n)
	}
	boom := errors.New("boom")
	if _, err := ReadAll(io.MultiReader(strings.NewReader("a"), errReader{boom}), 10, "x"); !errors.Is(err, boom) {
		t.Errorf("error %v, want the reader's", err)
	}
}

type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	return len(p), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{MaxFile: "10 MiB", MaxUnverified: "2 MiB", MaxAPIResponse: "64 MiB", 512 << 10: "512 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTransport(t *testing.T) {
	const limit = 1000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		_, _ = w.Write(bytes.Repeat([]byte("y"), n))
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(limit)(http.DefaultTransport.(*http.Transport).Clone())}
	defer client.CloseIdleConnections()
	tests := []struct {
		query    string
		tooLarge bool
		atOnce   bool // refused before the body is read
	}{
		{query: "n=10"},
		{query: "n=1000"},
		{query: "n=1000&chunked=1"},
		{query: "n=1001", tooLarge: true, atOnce: true},
		{query: "n=5000&chunked=1", tooLarge: true},
		{query: "n=0"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			url := srv.URL + "/?" + tt.query
			resp, err := client.Get(url)
			if tt.atOnce {
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "GET "+url) {
					t.Fatalf("error %v, want a refusal naming the request", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if tt.tooLarge {
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "GET "+url) || !strings.Contains(err.Error(), "1000 bytes") {
					t.Errorf("error %v, want a *TooLargeError naming the request and the limit", err)
				}
				if len(b) > limit {
					t.Errorf("read %d bytes past a limit of %d", len(b), limit)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(tt.query, "&")[0], "n=")); len(b) != want {
				t.Errorf("read %d bytes, want %d", len(b), want)
			}
		})
	}
}

// pipe returns a named pipe in dir that a goroutine fills with size bytes
// (or until its reader goes): a file that does not say its size.
func pipe(t *testing.T, dir string, size int) string {
	t.Helper()
	path := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.Write(make([]byte, size))
	}()
	return path
}
