package apilb

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Default timings: an upstream that stops answering is dropped within
// ProbeInterval + ProbeTimeout (about a second).
const (
	DefaultProbeInterval = 250 * time.Millisecond
	DefaultProbeTimeout  = 750 * time.Millisecond
	DefaultDialTimeout   = time.Second
)

// Prober checks one upstream (host:port); nil means healthy. It must
// return by the deadline of ctx.
type Prober func(ctx context.Context, addr string) error

// Config is what a Balancer needs.
type Config struct {
	// Preferred is the upstream to use while it is healthy (this node's
	// own API server on a control-plane node); "" for none.
	Preferred string
	// Probe checks an upstream; required.
	Probe Prober
	// ProbeInterval and ProbeTimeout default to DefaultProbeInterval and
	// DefaultProbeTimeout.
	ProbeInterval, ProbeTimeout time.Duration
	// Dial opens a connection to an upstream; a net.Dialer with
	// DefaultDialTimeout when nil.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnChange, when set, is called (without locks held) after an
	// upstream changed health, with the upstream and its new state.
	OnChange func(addr string, healthy bool)
	// ReportInterval, when positive, is how often the number of
	// connections forwarded to each upstream is logged (only when it
	// changed), so that one can see how they spread.
	ReportInterval time.Duration
}

// health of an upstream: unknown until its first probe.
type health int

const (
	unknown health = iota
	up
	down
)

type upstream struct {
	addr    string
	health  health
	probing bool
	conns   map[*forward]struct{}
	served  uint64
}

// forward is one client connection and the upstream connection it is
// joined to.
type forward struct {
	client, server net.Conn
}

func (f *forward) close() {
	_ = f.client.Close()
	_ = f.server.Close()
}

// Balancer forwards TCP connections to healthy upstreams. Its methods may
// be called from any goroutine. SetUpstreams may be called before or
// during Serve.
type Balancer struct {
	cfg Config

	mu    sync.Mutex
	ups   map[string]*upstream
	order []string // sorted addresses of ups
	next  int      // round-robin position
}

// New returns a Balancer with no upstreams.
func New(cfg Config) *Balancer {
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: DefaultDialTimeout}
		cfg.Dial = d.DialContext
	}
	return &Balancer{cfg: cfg, ups: map[string]*upstream{}}
}

// SetUpstreams replaces the upstream list. Upstreams that stay keep their
// health and connections; new ones start unknown (used only when no
// upstream is known healthy) until probed; connections to removed ones
// are closed. The preferred upstream is always kept in the list.
func (b *Balancer) SetUpstreams(list []string) {
	if b.cfg.Preferred != "" {
		list = append(slices.Clone(list), b.cfg.Preferred)
	}
	slices.Sort(list)
	list = slices.Compact(list)
	var closing []*forward
	b.mu.Lock()
	for addr, u := range b.ups {
		if !slices.Contains(list, addr) {
			for f := range u.conns {
				closing = append(closing, f)
			}
			delete(b.ups, addr)
		}
	}
	for _, addr := range list {
		if b.ups[addr] == nil {
			b.ups[addr] = &upstream{addr: addr, conns: map[*forward]struct{}{}}
		}
	}
	changed := !slices.Equal(b.order, list)
	b.order = list
	b.mu.Unlock()
	if changed {
		klog.Infof("upstreams: %v", list)
	}
	for _, f := range closing {
		f.close()
	}
}

// Upstreams returns the current upstream list, sorted.
func (b *Balancer) Upstreams() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.order)
}

// Status is what a Balancer knows of one upstream.
type Status struct {
	Addr string
	// Healthy is true after a good probe, false after a failed probe or
	// dial, and false before the first probe.
	Healthy bool
	// Probed is false until the first probe answered.
	Probed bool
	// Active is the number of connections forwarded to it now; Served the
	// number forwarded to it since it was added.
	Active int
	Served uint64
}

// Status returns the state of every upstream, sorted by address.
func (b *Balancer) Status() []Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Status, 0, len(b.order))
	for _, addr := range b.order {
		u := b.ups[addr]
		out = append(out, Status{Addr: addr, Healthy: u.health == up, Probed: u.health != unknown, Active: len(u.conns), Served: u.served})
	}
	return out
}

// candidates returns the upstreams to try for a new connection, best
// first: the preferred one if healthy; then the healthy ones, then the
// unknown ones, then the ones down, each group in round-robin order.
func (b *Balancer) candidates() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.order)
	if n == 0 {
		return nil
	}
	start := b.next % n
	b.next++
	var groups [3][]string
	for i := range n {
		addr := b.order[(start+i)%n]
		u := b.ups[addr]
		switch {
		case u.health == up && addr == b.cfg.Preferred:
			groups[0] = append([]string{addr}, groups[0]...)
		case u.health == up:
			groups[0] = append(groups[0], addr)
		case u.health == unknown:
			groups[1] = append(groups[1], addr)
		default:
			groups[2] = append(groups[2], addr)
		}
	}
	return slices.Concat(groups[0], groups[1], groups[2])
}

// setHealth records a probe's or dial's outcome. Going down closes every
// connection forwarded to the upstream.
func (b *Balancer) setHealth(addr string, healthy bool, why error) {
	var closing []*forward
	b.mu.Lock()
	u := b.ups[addr]
	if u == nil {
		b.mu.Unlock()
		return
	}
	old := u.health
	if healthy {
		u.health = up
	} else {
		u.health = down
		for f := range u.conns {
			closing = append(closing, f)
		}
	}
	changed := old != u.health
	b.mu.Unlock()
	if changed {
		if healthy {
			klog.Infof("upstream %s is healthy", addr)
		} else {
			klog.Warningf("upstream %s is down: %v", addr, why)
		}
		if b.cfg.OnChange != nil {
			b.cfg.OnChange(addr, healthy)
		}
	}
	for _, f := range closing {
		f.close()
	}
}

// Serve accepts connections on ln and forwards them until ctx ends, then
// closes ln and every forwarded connection. It probes the upstreams for as
// long as it runs. It returns nil when ctx ended, and the listener's error
// otherwise.
func (b *Balancer) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { b.probeLoop(ctx) })
	if b.cfg.ReportInterval > 0 {
		wg.Go(func() { b.reportLoop(ctx) })
	}
	wg.Go(func() {
		<-ctx.Done()
		_ = ln.Close()
	})
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = aerr
			}
			break
		}
		wg.Go(func() { b.handle(ctx, c) })
	}
	cancel()
	b.closeAll()
	wg.Wait()
	return err
}

// reportLoop logs Report every ReportInterval when it changed.
func (b *Balancer) reportLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.ReportInterval)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r := b.Report(); r != last {
			klog.Info(r)
			last = r
		}
	}
}

// Report is one line with, for each upstream, whether it is healthy and
// how many connections it was sent: "served: ADDR=up/N ADDR=down/M".
func (b *Balancer) Report() string {
	var sb strings.Builder
	sb.WriteString("served:")
	for _, s := range b.Status() {
		state := "down"
		if s.Healthy {
			state = "up"
		}
		fmt.Fprintf(&sb, " %s=%s/%d", s.Addr, state, s.Served)
	}
	return sb.String()
}

func (b *Balancer) closeAll() {
	b.mu.Lock()
	var closing []*forward
	for _, u := range b.ups {
		for f := range u.conns {
			closing = append(closing, f)
		}
	}
	b.mu.Unlock()
	for _, f := range closing {
		f.close()
	}
}

// probeLoop probes every upstream each interval, at once at the start. A
// probe still running from an earlier round is not started again.
func (b *Balancer) probeLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.ProbeInterval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		b.mu.Lock()
		var due []string
		for _, addr := range b.order {
			if u := b.ups[addr]; !u.probing {
				u.probing = true
				due = append(due, addr)
			}
		}
		b.mu.Unlock()
		for _, addr := range due {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, b.cfg.ProbeTimeout)
				err := b.cfg.Probe(pctx, addr)
				cancel()
				b.mu.Lock()
				if u := b.ups[addr]; u != nil {
					u.probing = false
				}
				b.mu.Unlock()
				if ctx.Err() == nil {
					b.setHealth(addr, err == nil, err)
				}
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// handle forwards one client connection: it dials the candidates in turn
// (a failed dial marks that upstream down) and copies both ways until
// either side closes.
func (b *Balancer) handle(ctx context.Context, client net.Conn) {
	var server net.Conn
	var addr string
	for _, a := range b.candidates() {
		dctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
		c, err := b.cfg.Dial(dctx, "tcp", a)
		cancel()
		if err == nil {
			server, addr = c, a
			break
		}
		if ctx.Err() != nil {
			break
		}
		b.setHealth(a, false, err)
	}
	if server == nil {
		klog.V(2).Infof("no upstream took the connection from %s", client.RemoteAddr())
		_ = client.Close()
		return
	}
	f := &forward{client: client, server: server}
	b.mu.Lock()
	u := b.ups[addr]
	if u == nil || ctx.Err() != nil {
		// Removed (or shutting down) while we dialled.
		b.mu.Unlock()
		f.close()
		return
	}
	u.conns[f] = struct{}{}
	u.served++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if u := b.ups[addr]; u != nil {
			delete(u.conns, f)
		}
		b.mu.Unlock()
		f.close()
	}()
	pipe(client, server)
}

// pipe copies both ways; when one direction ends it half-closes the other
// side's write end, and returns once both directions are done.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
			_ = cw.CloseWrite()
		} else {
			// An error on one side ends the whole forward.
			_ = a.Close()
			_ = b.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}
