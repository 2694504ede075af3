package pki

import (
	"context"
	"crypto"
	"errors"
	"sync"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// KeyPool makes keys ahead of need, several at a time. Key generation is
// what costs (tens of milliseconds for RSA, and a random time: it searches
// for primes), and keys do not depend on one another, so a caller that
// knows which keys it will need starts a pool and then takes the keys one
// by one, in any order, from Generator.
//
// The keys are all of one algorithm and equally fresh, so none belongs to a
// name: each Take hands out whichever key was finished first. A caller that
// uses its keys in a fixed order then goes on as soon as any key is ready,
// instead of waiting for a slow one while others are done.
//
// A KeyPool is safe for concurrent use.
type KeyPool struct {
	alg   kubeadm.EncryptionAlgorithmType
	gen   KeyGenerator
	ready chan madeKey
	mu    sync.Mutex
	owed  map[string]bool // names that have not taken their key yet

	// Of a held pool (NewHeldKeyPool): the hold, and how many keys were
	// started before its release, and how many were taken.
	hold           *KeyHold
	started, taken int
}

// madeKey is the outcome of making one key.
type madeKey struct {
	key crypto.Signer
	err error
}

// NewKeyPool starts making one key of algorithm alg for each distinct name
// of names, on up to workers goroutines, with gen (NewPrivateKey when nil).
// Once ctx is done no further key is started. Keys never taken are dropped
// with the pool.
func NewKeyPool(ctx context.Context, gen KeyGenerator, alg kubeadm.EncryptionAlgorithmType, names []string, workers int) *KeyPool {
	p := newKeyPool(gen, alg, names)
	p.launch(ctx, len(p.owed), workers)
	return p
}

// NewHeldKeyPool is NewKeyPool, one goroutine per key, for a caller that
// needs its first keys as soon as possible: it starts making only the first
// `now` keys, and the others once hold is released, so that until then the
// first ones (and whatever else the process does) have the cores. A Take
// that finds every key started so far already taken releases hold itself:
// a pool never waits for a release that does not come.
func NewHeldKeyPool(ctx context.Context, gen KeyGenerator, alg kubeadm.EncryptionAlgorithmType, names []string, now int, hold *KeyHold) *KeyPool {
	p := newKeyPool(gen, alg, names)
	n := len(p.owed)
	now = min(max(now, 0), n)
	p.launch(ctx, now, now)
	if now < n {
		p.hold, p.started = hold, now
		go func() {
			<-hold.released()
			p.launch(ctx, n-now, n-now)
		}()
	}
	return p
}

func newKeyPool(gen KeyGenerator, alg kubeadm.EncryptionAlgorithmType, names []string) *KeyPool {
	if gen == nil {
		gen = NewPrivateKey
	}
	p := &KeyPool{alg: alg, gen: gen, owed: make(map[string]bool, len(names))}
	for _, n := range names {
		p.owed[n] = true
	}
	p.ready = make(chan madeKey, len(p.owed))
	return p
}

// launch starts making keys keys on up to workers goroutines.
func (p *KeyPool) launch(ctx context.Context, keys, workers int) {
	todo := make(chan struct{}, keys)
	for range keys {
		todo <- struct{}{}
	}
	close(todo)
	for range min(max(workers, 1), keys) {
		go func() {
			for range todo {
				var m madeKey
				if m.err = ctx.Err(); m.err == nil {
					m.key, m.err = p.gen(p.alg)
				}
				p.ready <- m
			}
		}()
	}
}

// A KeyHold holds back the keys of the pools started with it (see
// NewHeldKeyPool) until it is released. The zero value is not usable; a nil
// *KeyHold is released.
type KeyHold struct {
	once sync.Once
	ch   chan struct{}
}

// NewKeyHold returns a hold not yet released.
func NewKeyHold() *KeyHold { return &KeyHold{ch: make(chan struct{})} }

// Release lets the held keys start. It may be called any number of times.
func (h *KeyHold) Release() {
	if h != nil {
		h.once.Do(func() { close(h.ch) })
	}
}

func (h *KeyHold) released() <-chan struct{} {
	if h == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return h.ch
}

// Generator returns the key generator to use for name. Its first call with
// the pool's algorithm takes a pooled key, waiting for one if need be; any
// other call (a second one, another algorithm, a name the pool was not
// started with) makes a fresh key.
func (p *KeyPool) Generator(name string) KeyGenerator {
	return func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		if p != nil {
			if alg == p.alg {
				if key, ok, err := p.Take(name); ok {
					return key, err
				}
			}
			return p.gen(alg)
		}
		return NewPrivateKey(alg)
	}
}

// Take hands out the first finished key of the pool to name, waiting for
// one if need be. ok is false, and nothing is made, when the pool (which
// may be nil) was not started with name or name took its key already.
func (p *KeyPool) Take(name string) (key crypto.Signer, ok bool, err error) {
	if p == nil {
		return nil, false, nil
	}
	p.mu.Lock()
	owed := p.owed[name]
	delete(p.owed, name)
	if owed {
		p.taken++
		if p.taken > p.started {
			p.hold.Release()
		}
	}
	p.mu.Unlock()
	if !owed {
		return nil, false, nil
	}
	m := <-p.ready
	return m.key, true, m.err
}

// KeysNeeded lists, in creation order, the certificates of cfg (and
// ServiceAccountKeyBase for the service-account key) that would need a new
// key if created in dir now. See NeedsKey.
func KeysNeeded(cfg *kubeadm.InitConfiguration, dir string) []string {
	var names []string
	for _, c := range Certificates(&cfg.ClusterConfiguration) {
		if NeedsKey(dir, c) {
			names = append(names, c.Name)
		}
	}
	if NeedsServiceAccountKey(dir) {
		names = append(names, ServiceAccountKeyBase)
	}
	return names
}

// EnsureAll runs EnsureCert for every certificate cfg needs, then
// EnsureServiceAccountKey, in parallel where it can: the keys are made by a
// pool of workers goroutines, the CAs are done together, then every leaf
// and the service-account key together. Results come in creation order
// (see Certificates). A failing CA skips what it signs. Every error is
// returned, joined. Like EnsureCert it is idempotent.
func EnsureAll(ctx context.Context, cfg *kubeadm.InitConfiguration, dir string, opts Options, workers int) ([]Result, Outcome, error) {
	certs := Certificates(&cfg.ClusterConfiguration)
	// The CAs, run first, take the first keys made.
	names := KeysNeeded(cfg, dir)
	pool := NewKeyPool(ctx, opts.NewKey, cfg.KeyAlgorithm(), names, workers)

	results := make([]Result, len(certs))
	errs := make([]error, len(certs)+1)
	run := func(wg *sync.WaitGroup, i int) {
		defer wg.Done()
		o := opts
		o.NewKey = pool.Generator(certs[i].Name)
		results[i], errs[i] = EnsureCert(cfg, dir, certs[i], o)
	}

	var wg sync.WaitGroup
	failedCA := map[string]bool{}
	for i, c := range certs {
		if c.IsCA() {
			wg.Add(1)
			go run(&wg, i)
		}
	}
	wg.Wait()
	for i, c := range certs {
		if c.IsCA() && errs[i] != nil {
			failedCA[c.Name] = true
		}
	}
	var saOutcome Outcome
	wg.Add(1)
	go func() {
		defer wg.Done()
		o := opts
		o.NewKey = pool.Generator(ServiceAccountKeyBase)
		saOutcome, errs[len(certs)] = EnsureServiceAccountKey(cfg, dir, o)
	}()
	for i, c := range certs {
		if !c.IsCA() && !failedCA[c.CA] {
			wg.Add(1)
			go run(&wg, i)
		}
	}
	wg.Wait()
	return results, saOutcome, errors.Join(errs...)
}
