// Command webserver is the workload of the test bed's upgrade and CA
// rotation tests: a Deployment of it behind a Service is probed through
// the Service while the cluster changes. It answers every HTTP request on
// :8080 with 200 and its host name, except /api: there it asks the API
// server who it is (a SelfSubjectReview) with its service-account token,
// through one in-cluster client kept for its whole life, as a controller
// does, and answers 200 with the user name, or 502 with the error. It
// stops on SIGINT or SIGTERM after the requests in flight are answered.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "ok %s\n", host)
	})
	// Outside a cluster there is no in-cluster configuration: /api
	// answers 502 then.
	var client kubernetes.Interface
	cfg, err := rest.InClusterConfig()
	if err == nil {
		cfg.QPS, cfg.Burst = 50, 100
		client, err = kubernetes.NewForConfig(cfg)
	}
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		if client == nil {
			http.Error(w, fmt.Sprintf("no in-cluster client: %v", err), http.StatusBadGateway)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 8*time.Second)
		defer cancel()
		review, rerr := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if rerr != nil {
			http.Error(w, rerr.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, "ok %s %s\n", host, review.Status.UserInfo.Username)
	})
	srv := &http.Server{Addr: ":8080", ReadHeaderTimeout: 5 * time.Second, Handler: mux}
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
