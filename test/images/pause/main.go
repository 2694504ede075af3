// Command pause is the test bed's pod sandbox program: it holds a pod's
// namespaces open, reaps the children it inherits as the pod's first
// process, and exits when asked to with SIGINT or SIGTERM.
//
// With -v it prints what it is and exits 0 at once, as the real pause
// image does: kubeadm's upgrade health check runs a Job of the pause image
// with that argument and waits for it to complete.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (kubeadm-go test bed)")
		return
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
