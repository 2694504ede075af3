// Command resolve is the test bed's DNS client: it looks a name up through
// the Pod's resolv.conf (Go's own resolver, no libc) again and again, and
// prints one line per lookup, "ok NAME ADDRESSES" or "fail NAME ERROR",
// each after the time it started, until SIGTERM or SIGINT. The end-to-end
// tests count the failures in its log.
//
//	resolve [-every 200ms] [-timeout 5s] NAME
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	every := flag.Duration("every", 200*time.Millisecond, "pause between two lookups")
	timeout := flag.Duration("timeout", 5*time.Second, "time one lookup may take")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: resolve [-every D] [-timeout D] NAME")
		os.Exit(2)
	}
	name := flag.Arg(0)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r := &net.Resolver{PreferGo: true}
	for ctx.Err() == nil {
		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, *timeout)
		addrs, err := r.LookupHost(lctx, name)
		cancel()
		stamp := start.UTC().Format("15:04:05.000")
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fmt.Printf("%s fail %s %v\n", stamp, name, err)
		default:
			fmt.Printf("%s ok %s %s\n", stamp, name, strings.Join(addrs, ","))
		}
		select {
		case <-ctx.Done():
		case <-time.After(*every):
		}
	}
}
