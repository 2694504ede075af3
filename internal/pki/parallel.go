package pki

import (
	"context"
	"crypto"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// KeyPool makes keys ahead of need, several at a time. Key generation is
// what costs (tens of milliseconds for RSA), and keys do not depend on one
// another, so a caller that knows which keys it will need starts a pool and
// then takes the keys one by one, in any order, from Generator.
//
// A KeyPool is safe for concurrent use.
type KeyPool struct {
	alg  kubeadm.EncryptionAlgorithmType
	gen  KeyGenerator
	keys map[string]*pooledKey
}

type pooledKey struct {
	done  chan struct{}
	key   crypto.Signer
	err   error
	taken atomic.Bool
}

// NewKeyPool starts making one key of algorithm alg for each of names, in
// the order given, on up to workers goroutines, with gen (NewPrivateKey
// when nil). Once ctx is done no further key is started. Keys never taken
// are dropped with the pool.
func NewKeyPool(ctx context.Context, gen KeyGenerator, alg kubeadm.EncryptionAlgorithmType, names []string, workers int) *KeyPool {
	if gen == nil {
		gen = NewPrivateKey
	}
	if workers < 1 {
		workers = 1
	}
	p := &KeyPool{alg: alg, gen: gen, keys: make(map[string]*pooledKey, len(names))}
	queue := make(chan *pooledKey, len(names))
	for _, n := range names {
		if _, dup := p.keys[n]; dup {
			continue
		}
		k := &pooledKey{done: make(chan struct{})}
		p.keys[n] = k
		queue <- k
	}
	close(queue)
	for range min(workers, len(p.keys)) {
		go func() {
			for k := range queue {
				if err := ctx.Err(); err != nil {
					k.err = err
				} else {
					k.key, k.err = gen(alg)
				}
				close(k.done)
			}
		}()
	}
	return p
}

// Generator returns the key generator to use for name. Its first call with
// the pool's algorithm takes the pooled key, waiting for it if need be;
// any other call (a second one, another algorithm, a name the pool does
// not hold) makes a fresh key.
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

// Take hands out the pooled key of name, waiting for it if need be. ok is
// false, and nothing is made, when the pool (which may be nil) holds no
// key of that name or it was taken already.
func (p *KeyPool) Take(name string) (key crypto.Signer, ok bool, err error) {
	if p == nil {
		return nil, false, nil
	}
	k := p.keys[name]
	if k == nil || k.taken.Swap(true) {
		return nil, false, nil
	}
	<-k.done
	return k.key, true, k.err
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
	// CA keys first: the leaves wait for their CA anyway.
	var names []string
	for _, n := range KeysNeeded(cfg, dir) {
		if c, ok := LookupCert(n); ok && c.IsCA() {
			names = append(names, n)
		}
	}
	for _, n := range KeysNeeded(cfg, dir) {
		if c, ok := LookupCert(n); !ok || !c.IsCA() {
			names = append(names, n)
		}
	}
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
