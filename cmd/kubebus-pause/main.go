// Command kubebus-pause is the process that holds a pod's namespaces: the
// kubelet runs it as the first container of every pod sandbox (from an image
// it builds from this binary, see kubelet/runtime/containerd). It does
// nothing but wait: it sleeps until SIGINT or SIGTERM, then exits 0, and
// reaps every zombie it inherits, since it is PID 1 of the pod's PID
// namespace when the pod shares one (shareProcessNamespace).
//
// It must stay tiny and static (CGO_ENABLED=0): it imports only os,
// os/signal and syscall.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
