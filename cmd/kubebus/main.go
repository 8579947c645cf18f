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
	if err := app.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kubebus:", err)
		os.Exit(1)
	}
}
