// Command kubeadm bootstraps Kubernetes clusters. All behaviour lives in
// internal/cli; main only wires the process's streams and maps the returned
// error to kubeadm's documented exit codes.
package main

import (
	"os"

	"github.com/kubeadm-go/kubeadm/internal/cli"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

func main() {
	err := cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	if err != nil {
		exitcode.Print(os.Stderr, err)
	}
	os.Exit(exitcode.Of(err))
}
