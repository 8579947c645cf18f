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
	logLevel    string
	memoryLimit string
	stderr      io.Writer
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
	root.PersistentFlags().StringVar(&g.memoryLimit, memoryLimitFlag, "0",
		"the Go runtime's soft memory limit: a quantity such as 768Mi; 0 derives one (90% of the cgroup's memory.max, else the smaller of 1Gi and half the machine's memory); none sets none. GOMEMLIMIT in the environment wins")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		// client-go logs through klog; send it to the same structured log.
		// Its info lines (leader election's "attempting to acquire")
		// repeat what our components log, so they count as debug.
		log := g.logger()
		slog.SetDefault(log)
		klog.SetSlogLogger(slog.New(infoAsDebug{log.Handler()}))
		limit, err := applyMemoryLimit(g.memoryLimit)
		if err != nil {
			return err
		}
		log.Debug("memory limit", "limit", limit)
		return nil
	}
	root.AddCommand(newServerCmd(g), newAPIServerCmd(g), newControllerManagerCmd(g))
	root.AddCommand(newTapCmd(g), newWhyCmd())
	root.AddCommand(newSchedulerCmd(g))
	root.AddCommand(newKubeletCmd(g), newImageCmd(g), newProxyCmd(g), newDNSCmd(g))
	root.AddCommand(newCertsCmd(), newEtcdCmd(g), newNATSCmd(g))
	return root
}

// infoAsDebug passes client-go's records on with INFO lowered to DEBUG,
// and also its errors about a connection that was closed: upstream's
// streaming code (exec, attach, port-forward over WebSocket) logs "Error
// on socket receive: ... use of closed network connection" at ERROR each
// time a client ends a session, which is how sessions end.
type infoAsDebug struct{ slog.Handler }

// closedConnection reports a record about a network connection closed on
// purpose.
func closedConnection(r slog.Record) bool {
	found := strings.Contains(r.Message, "use of closed network connection")
	r.Attrs(func(a slog.Attr) bool {
		found = found || strings.Contains(a.Value.String(), "use of closed network connection")
		return !found
	})
	return found
}

func (h infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo || (r.Level > slog.LevelInfo && closedConnection(r)) {
		r.Level = slog.LevelDebug
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return infoAsDebug{h.Handler.WithAttrs(as)}
}

func (h infoAsDebug) WithGroup(name string) slog.Handler {
	return infoAsDebug{h.Handler.WithGroup(name)}
}
