// Package app is the kubebus command line: a cobra tree whose Run function
// tests can call directly.
package app

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// Run executes the command line args.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

type globals struct {
	logLevel string
	stderr   io.Writer
}

func (g *globals) logger() *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(g.logLevel) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lvl}))
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stderr: stderr}
	root := &cobra.Command{
		Use:           "kubebus",
		Short:         "kubebus: a Kubernetes-compatible control plane, event-sourced on etcd with NATS JetStream fan-out",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		// client-go logs through klog; send it to the same structured log.
		// Its info lines (leader election's "attempting to acquire")
		// repeat what our components log, so they count as debug.
		klog.SetSlogLogger(slog.New(infoAsDebug{g.logger().Handler()}))
	}
	root.AddCommand(newServerCmd(g), newAPIServerCmd(g), newControllerManagerCmd(g))
	root.AddCommand(newTapCmd(g))
	root.AddCommand(newSchedulerCmd(g))
	root.AddCommand(newKubeletCmd(g), newImageCmd(g), newProxyCmd(g))
	return root
}

// infoAsDebug passes records on with INFO lowered to DEBUG.
type infoAsDebug struct{ slog.Handler }

func (h infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return infoAsDebug{h.Handler.WithAttrs(as)}
}

func (h infoAsDebug) WithGroup(name string) slog.Handler {
	return infoAsDebug{h.Handler.WithGroup(name)}
}
