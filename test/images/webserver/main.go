// Command webserver is the workload of the test bed's upgrade test: a
// Deployment of it behind a Service is probed through the Service while
// the cluster is upgraded. It answers every HTTP request on :8080 with
// 200 and its host name, and stops on SIGINT or SIGTERM after the
// requests in flight are answered.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	host, _ := os.Hostname()
	srv := &http.Server{
		Addr:              ":8080",
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "ok %s\n", host)
		}),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "webserver:", err)
		os.Exit(1)
	}
}
