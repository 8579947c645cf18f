package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Profile is one scheduler profile: the enabled plugins at each extension
// point, in the order they run, with the score weights. Build it with
// package config, or by hand in tests.
type Profile struct {
	// SchedulerName selects the profile: pods name it in spec.schedulerName.
	SchedulerName string

	PreFilter []PreFilterPlugin
	Filter    []FilterPlugin
	PreScore  []PreScorePlugin
	Score     []WeightedScorePlugin
	// Reserve and PreBind run after a node is chosen; see binding.go.
	Reserve []ReservePlugin
	PreBind []PreBindPlugin

	// PercentageOfNodesToScore bounds the search: once this share of the
	// nodes is found feasible, filtering stops. 0 means upstream's adaptive
	// default (50% minus 1% per 125 nodes, at least 5%); 100 means all.
	// Below 100 nodes every node is searched.
	PercentageOfNodesToScore int32

	// Preemption configures DefaultPreemption; nil turns preemption off.
	Preemption *PreemptionArgs
}

// WeightedScorePlugin is a Score plugin with its weight (≥ 1).
type WeightedScorePlugin struct {
	ScorePlugin
	Weight int64
}

// PreemptionArgs are DefaultPreemption's arguments: how many candidate
// nodes a preemption attempt dry-runs before it picks one, as a share of
// the nodes (MinCandidateNodesPercentage) with a floor
// (MinCandidateNodesAbsolute).
type PreemptionArgs struct {
	MinCandidateNodesPercentage int32 `json:"minCandidateNodesPercentage"`
	MinCandidateNodesAbsolute   int32 `json:"minCandidateNodesAbsolute"`
}

// RunPreFilter runs the PreFilter plugins in order. Plugins returning Skip
// are recorded in state.SkipFilterPlugins. It stops at the first plugin
// that rejects the pod or fails. The results of plugins that narrow the
// nodes are intersected; the names of those plugins are returned too.
func (p *Profile) RunPreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, snap *Snapshot) (*PreFilterResult, *Status, []string) {
	var result *PreFilterResult
	var narrowing []string
	state.SkipFilterPlugins = sets.New[string]()
	for _, pl := range p.PreFilter {
		r, s := pl.PreFilter(ctx, state, pod, snap)
		if s.IsSkip() {
			state.SkipFilterPlugins.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			if s.IsRejected() {
				return nil, s.WithPlugin(pl.Name()), narrowing
			}
			return nil, AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", pl.Name(), s.Err())).WithPlugin(pl.Name()), narrowing
		}
		if !r.AllNodes() {
			narrowing = append(narrowing, pl.Name())
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", narrowing)
			if len(narrowing) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", narrowing[0])
			}
			return result, NewStatus(UnschedulableAndUnresolvable, msg).WithPlugin(pl.Name()), narrowing
		}
	}
	return result, nil, narrowing
}

// RunFilter runs the Filter plugins (except skipped ones) on one node and
// returns the first non-success status, with its plugin set. Errors are
// wrapped with the plugin name.
func (p *Profile) RunFilter(ctx context.Context, state *CycleState, pod *v1.Pod, ni *NodeInfo) *Status {
	for _, pl := range p.Filter {
		if state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		s := pl.Filter(ctx, state, pod, ni)
		if s.IsSuccess() {
			continue
		}
		if !s.IsRejected() {
			return AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.Err())).WithPlugin(pl.Name())
		}
		return s.WithPlugin(pl.Name())
	}
	return nil
}

// RunFilterWithNominatedPods runs the filters on a node as upstream does
// when pods are nominated to it: first with the nominated pods of equal or
// higher priority added (the pod must not take room kept for them), then,
// if that passed and any were added, again without them (filters such as
// pod affinity may need them absent). The pod must pass both.
func (p *Profile) RunFilterWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, ni *NodeInfo, snap *Snapshot) *Status {
	nominated := snap.NominatedPods(ni.Name())
	if len(nominated) == 0 {
		return p.RunFilter(ctx, state, pod, ni)
	}
	var niWith *NodeInfo
	var stateWith *CycleState
	prio, key := PodPriority(pod), PodKey(pod)
	for _, npi := range nominated {
		if PodPriority(npi.Pod) < prio || PodKey(npi.Pod) == key {
			continue
		}
		if niWith == nil {
			niWith, stateWith = ni.Clone(), state.Clone()
		}
		niWith.AddPodInfo(npi)
		if s := p.RunPreFilterAddPod(ctx, stateWith, pod, npi, niWith); !s.IsSuccess() {
			return s
		}
	}
	if niWith == nil {
		return p.RunFilter(ctx, state, pod, ni)
	}
	if s := p.RunFilter(ctx, stateWith, pod, niWith); !s.IsSuccess() {
		return s
	}
	return p.RunFilter(ctx, state, pod, ni)
}

// RunPreFilterAddPod tells the PreFilterExtensions of the (non-skipped)
// PreFilter plugins that podToAdd was added to nodeInfo.
func (p *Profile) RunPreFilterAddPod(ctx context.Context, state *CycleState, pod *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range p.PreFilter {
		ext, ok := pl.(PreFilterExtensions)
		if !ok || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.AddPod(ctx, state, pod, podToAdd, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running AddPod on PreFilter plugin %q: %w", pl.Name(), s.Err()))
		}
	}
	return nil
}

// RunPreFilterRemovePod tells the PreFilterExtensions that podToRemove was
// removed from nodeInfo.
func (p *Profile) RunPreFilterRemovePod(ctx context.Context, state *CycleState, pod *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, pl := range p.PreFilter {
		ext, ok := pl.(PreFilterExtensions)
		if !ok || state.SkipFilterPlugins.Has(pl.Name()) {
			continue
		}
		if s := ext.RemovePod(ctx, state, pod, podToRemove, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running RemovePod on PreFilter plugin %q: %w", pl.Name(), s.Err()))
		}
	}
	return nil
}

// RunPreScore runs the PreScore plugins; Skip is recorded in
// state.SkipScorePlugins.
func (p *Profile) RunPreScore(ctx context.Context, state *CycleState, pod *v1.Pod, snap *Snapshot, nodes []*NodeInfo) *Status {
	state.SkipScorePlugins = sets.New[string]()
	for _, pl := range p.PreScore {
		s := pl.PreScore(ctx, state, pod, snap, nodes)
		if s.IsSkip() {
			state.SkipScorePlugins.Insert(pl.Name())
			continue
		}
		if !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreScore plugin %q: %w", pl.Name(), s.Err())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// PluginScore is one plugin's weighted, normalized score for a node.
type PluginScore struct {
	Plugin string
	Score  int64
}

// NodePluginScores is a node's total score and its parts.
type NodePluginScores struct {
	Name       string
	Scores     []PluginScore
	TotalScore int64
}

// RunScore scores the nodes with every non-skipped Score plugin,
// normalizes each plugin's scores, checks they lie in [0, 100], applies the
// weights and sums them. workers > 1 scores nodes concurrently; the result
// does not depend on it.
func (p *Profile) RunScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, workers int) ([]NodePluginScores, *Status) {
	active := make([]WeightedScorePlugin, 0, len(p.Score))
	for _, pl := range p.Score {
		if !state.SkipScorePlugins.Has(pl.Name()) {
			active = append(active, pl)
		}
	}
	out := make([]NodePluginScores, len(nodes))
	perPlugin := make([]NodeScoreList, len(active))
	scoreBuf := make(NodeScoreList, len(active)*len(nodes))
	for j := range active {
		perPlugin[j] = scoreBuf[j*len(nodes) : (j+1)*len(nodes) : (j+1)*len(nodes)]
	}
	errs := make([]*Status, len(nodes))
	Parallelize(workers, len(nodes), func(i int) {
		for j, pl := range active {
			s, st := pl.Score(ctx, state, pod, nodes[i])
			if !st.IsSuccess() {
				errs[i] = AsStatus(fmt.Errorf("running Score plugin %q on node %q: %w", pl.Name(), nodes[i].Name(), st.Err())).WithPlugin(pl.Name())
				return
			}
			perPlugin[j][i] = NodeScore{Name: nodes[i].Name(), Score: s}
		}
	})
	for _, st := range errs {
		if st != nil {
			return nil, st
		}
	}
	flat := make([]PluginScore, len(nodes)*len(active))
	for i := range out {
		out[i] = NodePluginScores{Name: nodes[i].Name(), Scores: flat[i*len(active) : (i+1)*len(active) : (i+1)*len(active)]}
	}
	for j, pl := range active {
		scores := perPlugin[j]
		if n, ok := pl.ScorePlugin.(ScoreNormalizer); ok {
			if st := n.NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running NormalizeScore of %q: %w", pl.Name(), st.Err())).WithPlugin(pl.Name())
			}
		}
		for i := range scores {
			s := scores[i].Score
			if s < MinNodeScore || s > MaxNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %q returned score %d for node %q, outside [%d, %d]", pl.Name(), s, scores[i].Name, MinNodeScore, MaxNodeScore))
			}
			w := s * pl.Weight
			out[i].Scores[j] = PluginScore{Plugin: pl.Name(), Score: w}
			out[i].TotalScore += w
		}
	}
	return out, nil
}

// Parallelize calls fn(i) for i in [0, n) on up to workers goroutines
// (inline when workers ≤ 1 or n is small). fn must only write its own
// slot of any shared output.
func Parallelize(workers, n int, fn func(i int)) {
	if workers <= 1 || n < 64 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	chunk := max(8, n/(workers*4))
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Pointer[WorkerPanic]
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					panicked.CompareAndSwap(nil, &WorkerPanic{Value: v, Stack: debug.Stack()})
				}
			}()
			for {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		// A worker's panic would end the process: hand it to the caller's
		// goroutine, whose recovery (the scheduler's loop) can handle it.
		panic(p)
	}
}

// WorkerPanic is what Parallelize panics with when fn panicked on one of
// its worker goroutines: the worker's panic value and stack.
type WorkerPanic struct {
	Value any
	Stack []byte
}

func (p *WorkerPanic) String() string {
	return fmt.Sprintf("%v [on a Parallelize worker; its stack:\n%s]", p.Value, p.Stack)
}
