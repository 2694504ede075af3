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
	if gen == nil {
		gen = NewPrivateKey
	}
	p := &KeyPool{alg: alg, gen: gen, owed: make(map[string]bool, len(names))}
	for _, n := range names {
		p.owed[n] = true
	}
	p.ready = make(chan madeKey, len(p.owed))
	todo := make(chan struct{}, len(p.owed))
	for range len(p.owed) {
		todo <- struct{}{}
	}
	close(todo)
	for range min(max(workers, 1), len(p.owed)) {
		go func() {
			for range todo {
				var m madeKey
				if m.err = ctx.Err(); m.err == nil {
					m.key, m.err = gen(alg)
				}
				p.ready <- m
			}
		}()
	}
	return p
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
	pool := NewKeyPool(ctx, opts.NewKey, cfg.EncryptionAlgorithm, names, workers)

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
