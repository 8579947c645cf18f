// Command kubebus is the kubebus control plane: one binary whose
// subcommands run the all-in-one cluster or each component alone.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubebus/kubebus/cmd/kubebus/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	if app.IsWhyPlugin(os.Args[0]) {
		// Installed as kubectl-why, the binary is the kubectl plugin
		// "kubectl why": kubectl passes the rest of the command line.
		args = append([]string{"why"}, args...)
	}
	if err := app.Run(ctx, args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kubebus:", err)
		os.Exit(1)
	}
}
