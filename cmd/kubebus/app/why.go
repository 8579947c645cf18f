package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus/why"
)

// logTailLines is how many lines of a crashing container's log why shows.
const logTailLines = 8

func newWhyCmd() *cobra.Command {
	var (
		kubeconfig, kubeContext, namespace, output, at string
	)
	cmd := &cobra.Command{
		Use:   "why KIND/NAME",
		Short: "Explain why an object is not running yet, from its history on the bus",
		Long: `Explain where an object is on its way to serving traffic, and why it stops
there. why reads the object's history, and that of its owners and dependents,
from the bus through the API server's tap endpoint (a kubeconfig and your
RBAC rights are enough) and prints:

  the chain: for a Deployment, Deployment -> ReplicaSet -> Pod -> bound ->
  sandbox -> containers started -> ready -> in EndpointSlices -> programmed
  by the proxy, with the revision, time and writer of each step and how long
  it took after the step before; the slowest step is marked with *;

  where it stops, and why, with the evidence: unschedulable (the
  scheduler's counts per reason and the node that came closest), an image
  that cannot be pulled, a crashing container (exit code, last log lines), a
  failing readiness probe, a quota or admission refusal, an object stuck on
  a finalizer (and who added it), a stalled rollout, a Service whose
  selector matches nothing.

Events are read from the bus's history too, so the answer holds after they
are deleted. Installed as kubectl-why, it is the kubectl plugin 'kubectl why'.`,
		Example: `  kubebus why deployment/web
  kubectl why pod/web-5d8f7c-x2x9q -n shop
  kubebus why svc/web -o json
  kubebus why ns/team-a --at 1200`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format := strings.ToLower(output)
			if format != "" && format != "text" && format != "json" {
				return fmt.Errorf("why: unknown output format %q (want text or json)", output)
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
			rc, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			if namespace == "" {
				if namespace, _, err = cc.Namespace(); err != nil {
					return fmt.Errorf("reading the kubeconfig's namespace: %w", err)
				}
			}
			target, err := why.ParseTarget(args[0], namespace)
			if err != nil {
				return err
			}
			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfigAndClient(rc, hc)
			if err != nil {
				return err
			}
			src := &why.Remote{HTTP: hc, Server: rc.Host, Clientset: cs}
			ctx := cmd.Context()
			world, err := why.Gather(ctx, src, target)
			if err != nil {
				return err
			}
			if at != "" {
				rev, err := parseAt(at, world, time.Now())
				if err != nil {
					return err
				}
				world = world.Until(rev)
			}
			logs := func(ns, pod, container string, previous bool) (string, error) {
				return src.Logs(ctx, ns, pod, container, previous, logTailLines)
			}
			if at != "" {
				logs = nil // logs are of now, not of then
			}
			report := why.Explain(world, target, logs)
			if format == "json" {
				return why.RenderJSON(cmd.OutOrStdout(), report)
			}
			return why.Render(cmd.OutOrStdout(), report, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&kubeContext, "context", "", "kubeconfig context to use")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the object (default the context's, else default)")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	f.StringVar(&at, "at", "", "explain the object as it was at this etcd revision (e.g. 1200), time (RFC 3339) or duration ago (e.g. 10m)")
	return cmd
}

// parseAt turns --at into a revision: a revision as given, a time or a
// duration ago as the newest revision stored by then.
func parseAt(s string, w *why.World, now time.Time) (int64, error) {
	if rev, err := strconv.ParseInt(s, 10, 64); err == nil {
		if rev <= 0 {
			return 0, fmt.Errorf("why: --at %d: a revision is positive", rev)
		}
		return rev, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil || d < 0 {
			return 0, fmt.Errorf("why: --at %q is not a revision, an RFC 3339 time or a duration", s)
		}
		t = now.Add(-d)
	}
	rev := w.RevisionAt(t)
	if rev == 0 {
		return 0, fmt.Errorf("why: the bus holds nothing about the object from before %s", t.Format(time.RFC3339))
	}
	return rev, nil
}

// WhyPluginName is the name under which the binary is the kubectl plugin
// `kubectl why`.
const WhyPluginName = "kubectl-why"

// IsWhyPlugin reports whether argv0 names the binary as the kubectl plugin.
func IsWhyPlugin(argv0 string) bool {
	base := argv0[strings.LastIndexByte(argv0, '/')+1:]
	return base == WhyPluginName
}
