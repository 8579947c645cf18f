package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/scheduler/framework"
)

func names[T framework.Plugin](list []T) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Name()
	}
	return out
}

func scoreWeights(p *framework.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Score {
		out[s.Name()] = s.Weight
	}
	return out
}

func load(t *testing.T, y string) *framework.Profile {
	t.Helper()
	c, err := Load([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := c.BuildProfiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d profiles", len(ps))
	}
	for _, p := range ps {
		return p
	}
	return nil
}

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load([]byte(header))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Parallelism != 16 || *c.PercentageOfNodesToScore != 0 || *c.PodInitialBackoffSeconds != 1 || *c.PodMaxBackoffSeconds != 10 {
		t.Errorf("top-level defaults: %+v", c)
	}
	le := c.LeaderElection
	if !*le.LeaderElect || le.LeaseDuration.Duration != 15*time.Second || le.RenewDeadline.Duration != 10*time.Second ||
		le.RetryPeriod.Duration != 2*time.Second || le.ResourceName != "kube-scheduler" || le.ResourceNamespace != "kube-system" {
		t.Errorf("leader election defaults: %+v", le)
	}
	ps, err := c.BuildProfiles()
	if err != nil {
		t.Fatal(err)
	}
	p := ps[DefaultSchedulerName]
	if p == nil {
		t.Fatalf("no %s profile: %v", DefaultSchedulerName, ps)
	}
	wantFilter := "NodeUnschedulable NodeName TaintToleration NodeAffinity NodePorts NodeResourcesFit VolumeBinding PodTopologySpread InterPodAffinity"
	if got := strings.Join(names(p.Filter), " "); got != wantFilter {
		t.Errorf("filter = %s\nwant     %s", got, wantFilter)
	}
	wantPreFilter := "NodeAffinity NodePorts NodeResourcesFit VolumeBinding PodTopologySpread InterPodAffinity"
	if got := strings.Join(names(p.PreFilter), " "); got != wantPreFilter {
		t.Errorf("preFilter = %s", got)
	}
	wantScore := "TaintToleration NodeAffinity NodeResourcesFit PodTopologySpread InterPodAffinity NodeResourcesBalancedAllocation ImageLocality"
	if got := strings.Join(names(p.Score), " "); got != wantScore {
		t.Errorf("score = %s\nwant    %s", got, wantScore)
	}
	w := scoreWeights(p)
	for name, want := range map[string]int64{"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
		"InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1} {
		if w[name] != want {
			t.Errorf("weight of %s = %d, want %d", name, w[name], want)
		}
	}
	if got := names(p.Reserve); len(got) != 1 || got[0] != "VolumeBinding" {
		t.Errorf("reserve = %v", got)
	}
	if got := names(p.PreBind); len(got) != 1 || got[0] != "VolumeBinding" {
		t.Errorf("preBind = %v", got)
	}
	if p.Preemption == nil || p.Preemption.MinCandidateNodesPercentage != 10 || p.Preemption.MinCandidateNodesAbsolute != 100 {
		t.Errorf("preemption = %+v", p.Preemption)
	}
	if d, err := Default().BuildProfiles(); err != nil || len(d[DefaultSchedulerName].Score) != 7 {
		t.Errorf("Default(): %v %v", d, err)
	}
}

func TestImageLocalityDisabled(t *testing.T) {
	t.Parallel()
	for name, y := range map[string]string{
		"score.disabled": `
profiles:
- plugins:
    score:
      disabled:
      - name: ImageLocality
`,
		"multiPoint.disabled": `
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled:
      - name: ImageLocality
`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := load(t, header+y)
			for _, s := range p.Score {
				if s.Name() == "ImageLocality" {
					t.Fatal("ImageLocality still scores")
				}
			}
			for _, s := range p.PreScore {
				if s.Name() == "ImageLocality" && name == "multiPoint.disabled" {
					t.Fatal("ImageLocality still pre-scores")
				}
			}
			if len(p.Score) != 6 {
				t.Fatalf("score plugins: %v", names(p.Score))
			}
		})
	}
}

func TestScoreConfiguration(t *testing.T) {
	t.Parallel()
	p := load(t, header+`
percentageOfNodesToScore: 30
profiles:
- schedulerName: packer
  percentageOfNodesToScore: 50
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      - name: ImageLocality
        weight: 0
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 2
        - name: memory
  - name: DefaultPreemption
    args:
      minCandidateNodesAbsolute: 10
`)
	if p.SchedulerName != "packer" || p.PercentageOfNodesToScore != 50 {
		t.Errorf("profile %q %d", p.SchedulerName, p.PercentageOfNodesToScore)
	}
	w := scoreWeights(p)
	if w["NodeResourcesFit"] != 5 || w["ImageLocality"] != 1 || w["TaintToleration"] != 3 {
		t.Errorf("weights %v", w)
	}
	// Re-enabled plugins come first, in the order given.
	if got := names(p.Score)[:2]; got[0] != "NodeResourcesFit" || got[1] != "ImageLocality" {
		t.Errorf("order %v", names(p.Score))
	}
	if p.Preemption.MinCandidateNodesAbsolute != 10 || p.Preemption.MinCandidateNodesPercentage != 10 {
		t.Errorf("preemption %+v", p.Preemption)
	}
}

func TestDisableEverythingThenEnable(t *testing.T) {
	t.Parallel()
	p := load(t, header+`
profiles:
- plugins:
    multiPoint:
      disabled:
      - name: "*"
    filter:
      enabled:
      - name: NodeName
    score:
      enabled:
      - name: NodeResourcesFit
`)
	if got := names(p.Filter); len(got) != 1 || got[0] != "NodeName" {
		t.Errorf("filter %v", got)
	}
	if got := names(p.Score); len(got) != 1 || got[0] != "NodeResourcesFit" {
		t.Errorf("score %v", got)
	}
	if len(p.PreFilter) != 0 || p.Preemption != nil {
		t.Errorf("preFilter %v, preemption %v", names(p.PreFilter), p.Preemption)
	}
}

func TestPreemptionDisabled(t *testing.T) {
	t.Parallel()
	p := load(t, header+`
profiles:
- plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
`)
	if p.Preemption != nil {
		t.Fatal("preemption still enabled")
	}
}

func TestMultipleProfiles(t *testing.T) {
	t.Parallel()
	c, err := Load([]byte(header + `
profiles:
- schedulerName: default-scheduler
- schedulerName: no-images
  plugins:
    score:
      disabled:
      - name: ImageLocality
`))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := c.BuildProfiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps["default-scheduler"].Score) != 7 || len(ps["no-images"].Score) != 6 {
		t.Fatalf("profiles %v", ps)
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"wrong version", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", "unsupported apiVersion"},
		{"wrong kind", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n", `kind "Policy"`},
		{"unknown field", header + "percentageOfNodes: 10\n", `unknown field "percentageOfNodes"`},
		{"percentage out of range", header + "percentageOfNodesToScore: 101\n", "percentageOfNodesToScore: 101 is not in [0, 100]"},
		{"profile percentage out of range", header + "profiles:\n- percentageOfNodesToScore: -1\n", "profiles[0].percentageOfNodesToScore: -1"},
		{"backoff", header + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n", "podMaxBackoffSeconds: 2 must not be less than"},
		{"parallelism", header + "parallelism: 0\n", "parallelism: 0 must be greater than zero"},
		{"unnamed profiles", header + "profiles:\n- {}\n- schedulerName: b\n", "profiles[0].schedulerName: required"},
		{"duplicate profile", header + "profiles:\n- schedulerName: a\n- schedulerName: a\n", `profiles[1].schedulerName: "a" is already used by profiles[0]`},
		{"unknown plugin", header + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Foo\n", `profiles[0].plugins.score.enabled[0]: unknown plugin "Foo"`},
		{"unimplemented plugin", header + "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: VolumeZone\n", `plugin "VolumeZone" is not implemented`},
		{"negative weight", header + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: -1\n", "weight: -1 must not be negative"},
		{"filter plugin as score", header + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeName\n", `plugin "NodeName" does not implement score`},
		{"bad strategy", header + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Random\n", `scoringStrategy.type: "Random" is not one of`},
		{"unknown arg", header + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategie: {}\n", `unknown field "scoringStrategie"`},
		{"args for an argless plugin", header + "profiles:\n- pluginConfig:\n  - name: ImageLocality\n    args:\n      x: 1\n", "takes no arguments"},
		{"args twice", header + "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n", "configured twice"},
		{"preemption args", header + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n      minCandidateNodesAbsolute: 0\n", "must not both be zero"},
		{"extenders", header + "extenders:\n- urlPrefix: http://x\n", "extenders are not supported"},
		{"lease", header + "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 10s\n", "leaseDuration: 5s must be greater than renewDeadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load([]byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	if _, err := Load([]byte("apiVersion: v2\n")); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("errors.Is(ErrUnsupportedVersion) = false for %v", err)
	}
}
