package csrapprover

import (
	"bytes"
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// DefaultReloadInterval is how often Reloader reads the kubeconfig file
// by default.
const DefaultReloadInterval = 10 * time.Second

// Reloader runs Approver on a client of the kubeconfig file at Path, and
// on a new client whenever the file's content changes: the automatic
// renewal and a CA rotation (its trust, sign and finish steps) rewrite the
// file, and the approver uses the new credential and CAs within an
// Interval, without its static Pod restarting. Approver, Path and Connect
// must be set.
type Reloader struct {
	Approver *Approver
	Path     string
	// Connect makes the API of a kubeconfig file's content.
	Connect func(kubeconfig []byte) (API, error)
	// Interval is how often the file is read (default
	// DefaultReloadInterval).
	Interval time.Duration
	// Read reads the file (default: boundedread.ReadFile, at most
	// boundedread.MaxFile bytes).
	Read func(path string) ([]byte, error)
}

func (r *Reloader) read() ([]byte, error) {
	if r.Read != nil {
		return r.Read(r.Path)
	}
	return boundedread.ReadFile(r.Path, boundedread.MaxFile)
}

func (r *Reloader) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultReloadInterval
}

// Run runs the approver until ctx ends. A changed file that makes no
// client is logged and the current client kept, until the file changes
// again. As Approver.Run, it returns an Unauthorized error, for the
// process to end, unless the file changed since its client was made: then
// it goes on with the new content. Otherwise it returns ctx's error, or
// the error of the first read or client.
func (r *Reloader) Run(ctx context.Context) error {
	seen, err := r.read()
	if err != nil {
		return fmt.Errorf("reading the approver's kubeconfig: %w", err)
	}
	api, err := r.Connect(seen)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Path, err)
	}
	for {
		r.Approver.API = api
		rctx, cancel := context.WithCancel(ctx)
		next := make(chan []byte, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.watch(rctx, seen, next, cancel)
		}()
		err := r.Approver.Run(rctx)
		cancel()
		<-done
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var changed []byte
		select {
		case changed = <-next:
		default:
		}
		if changed == nil && apierrors.IsUnauthorized(err) {
			// Refused: the file may have changed since the last look.
			if data, rerr := r.read(); rerr == nil && !bytes.Equal(data, seen) {
				changed = data
			}
		}
		if changed == nil {
			return err
		}
		seen = changed
		fresh, cerr := r.Connect(changed)
		if cerr != nil {
			r.Approver.logf("%s changed but makes no client: %v; going on with the previous one", r.Path, cerr)
			if apierrors.IsUnauthorized(err) {
				return err
			}
			continue
		}
		r.Approver.logf("%s changed: using its new credential and CAs", r.Path)
		api = fresh
	}
}

// watch reads the file every interval until ctx ends or its content
// differs from seen; then it hands the new content to next and calls
// cancel. A failed read is logged (once until it fails otherwise) and the
// file read again later: an administrator may be replacing it.
func (r *Reloader) watch(ctx context.Context, seen []byte, next chan<- []byte, cancel func()) {
	t := time.NewTicker(r.interval())
	defer t.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := r.read()
		if err != nil {
			if err.Error() != lastErr {
				lastErr = err.Error()
				r.Approver.logf("reading the approver's kubeconfig: %v; trying again in %v", err, r.interval())
			}
			continue
		}
		lastErr = ""
		if !bytes.Equal(data, seen) {
			next <- data
			cancel()
			return
		}
	}
}
