package apilb

import (
	"context"
	"io"
	"net"
	"testing"
)

// startEcho serves a TCP echo on a real loopback port until the benchmark
// ends.
func startEcho(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// target returns the address a benchmark talks to: the echo server
// itself, or a balancer in front of it.
func target(b *testing.B, viaBalancer bool) string {
	echo := startEcho(b)
	if !viaBalancer {
		return echo
	}
	lb := New(Config{Probe: func(context.Context, string) error { return nil }})
	lb.SetUpstreams([]string{echo})
	return startBalancer(b, lb)
}

var paths = []struct {
	name string
	lb   bool
}{{"direct", false}, {"balancer", true}}

// BenchmarkRoundTrip: one byte there and back on an open connection, the
// latency a request adds when forwarded.
func BenchmarkRoundTrip(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			c, err := net.Dial("tcp", target(b, p.lb))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := []byte{1}
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConnect: a new connection and one round trip, what a client
// pays to open a connection through the balancer.
func BenchmarkConnect(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			addr := target(b, p.lb)
			buf := []byte{1}
			for b.Loop() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
			}
		})
	}
}

// BenchmarkThroughput: 1 MiB there and back per iteration (b.SetBytes
// counts both directions).
func BenchmarkThroughput(b *testing.B) {
	const chunk = 1 << 20
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			c, err := net.Dial("tcp", target(b, p.lb))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			out := make([]byte, chunk)
			in := make([]byte, chunk)
			b.SetBytes(2 * chunk)
			b.ResetTimer()
			for b.Loop() {
				errc := make(chan error, 1)
				go func() { _, err := c.Write(out); errc <- err }()
				if _, err := io.ReadFull(c, in); err != nil {
					b.Fatal(err)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
