// Package cycle is the scheduling cycle: a pure function from a profile, a
// snapshot and a pod to a decision (a node, or why none fits and whom to
// preempt). It reads no clock and does no I/O; everything that varies
// between calls (where the node search starts, how ties are broken) is an
// input, so the same inputs give the same decision.
//
// The caller's duties, per pod taken from the queue:
//   - pick the profile by spec.schedulerName and call Schedule with the
//     scheduler's snapshot (see package framework for keeping it), the
//     NextStartIndex of the previous call and a tie-breaker;
//   - on success: assume the pod (Snapshot.AddPod with spec.nodeName set to
//     Result.Node), bind it through pods/binding, emit a Scheduled event,
//     and RemovePod it again if the bind fails;
//   - on a *framework.FitError: record a FailedScheduling event with its
//     Error() text and the PodScheduled=False condition, carry out
//     Result.Preemption if there is one (see package preemption), and put
//     the pod back in the unschedulable queue, keyed by
//     Diagnosis.UnschedulablePlugins;
//   - on any other error: back off and retry.
package cycle

import (
	"context"
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	"github.com/kubebus/kubebus/scheduler/preemption"
)

const (
	// minFeasibleNodesToFind: below this many nodes every node is searched.
	minFeasibleNodesToFind = 100
	// minFeasibleNodesPercentageToFind floors the adaptive percentage.
	minFeasibleNodesPercentageToFind = 5
)

// Options are the inputs of a cycle besides the profile, snapshot and pod.
type Options struct {
	// StartIndex is where the node search starts in snap.NodeInfos(), so
	// successive cycles that stop early look at different nodes. Pass the
	// previous Result.NextStartIndex.
	StartIndex int
	// Choose picks one of n equally good nodes, returning an index in
	// [0, n). Nil picks the first in search order. See SeededChooser.
	Choose func(n int) int
	// Parallelism is how many goroutines filter and score nodes; ≤ 1
	// means none. The result does not depend on it.
	Parallelism int
	// PodDisruptionBudgets are respected by preemption where possible.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
}

// Result is a cycle's decision.
type Result struct {
	// Node is the chosen node; empty when the pod fits nowhere.
	Node string
	// EvaluatedNodes is how many nodes the filters looked at.
	EvaluatedNodes int
	// FeasibleNodes is how many of them fit the pod.
	FeasibleNodes int
	// NextStartIndex is the StartIndex for the next cycle.
	NextStartIndex int
	// Diagnosis tells why the pod fits nowhere (also in the FitError).
	Diagnosis framework.Diagnosis
	// Preemption is the eviction plan when the pod fits nowhere and
	// preemption found room; nil otherwise.
	Preemption *preemption.Result
	// State is the cycle's state, which Reserve and PreBind plugins read.
	State *framework.CycleState
}

// SeededChooser returns a deterministic tie-breaker: the same seed gives
// the same sequence of choices.
func SeededChooser(seed uint64) func(n int) int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(n int) int { return r.IntN(n) }
}

// NumFeasibleNodesToFind returns how many feasible nodes to find before
// scoring, as upstream: every node below 100 nodes or at 100%; otherwise
// the percentage (0 means adaptive: 50% minus 1% per 125 nodes, at least
// 5%) of the nodes, but at least 100.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	p := int(percentage)
	if p <= 0 {
		p = max(50-numAllNodes/125, minFeasibleNodesPercentageToFind)
	}
	return max(numAllNodes*p/100, minFeasibleNodesToFind)
}

// Schedule runs one scheduling cycle for pod: PreFilter, Filter (with
// nominated pods, stopping once enough feasible nodes are found), then
// PreScore, Score and selection of the best node. When the pod fits
// nowhere it returns a *framework.FitError (and the same Diagnosis in the
// Result) and, if the profile enables preemption, the preemption plan in
// Result.Preemption. framework.ErrNoNodesAvailable means the snapshot is
// empty; other errors come from plugins.
func Schedule(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, pod *v1.Pod, opts Options) (Result, error) {
	all := snap.NodeInfos()
	res := Result{NextStartIndex: opts.StartIndex}
	if len(all) == 0 {
		return res, framework.ErrNoNodesAvailable
	}
	state := framework.NewCycleState()
	res.State = state
	diag := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}

	pre, s, narrowing := p.RunPreFilter(ctx, state, pod, snap)
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return res, s.Err()
		}
		diag.AbsentNodesStatus = s
		diag.PreFilterMsg = s.Message()
		diag.AddPluginStatus(s)
		return fail(ctx, p, snap, pod, state, diag, res, len(all), opts)
	}

	// A pod nominated by an earlier preemption tries its node first.
	if name := pod.Status.NominatedNodeName; name != "" && (pre.AllNodes() || pre.NodeNames.Has(name)) {
		if ni := snap.Get(name); ni != nil {
			s := p.RunFilterWithNominatedPods(ctx, state, pod, ni, snap)
			if s.Code() == framework.Error {
				return res, s.Err()
			}
			if s.IsSuccess() {
				res.Node, res.EvaluatedNodes, res.FeasibleNodes = name, 1, 1
				return res, nil
			}
		}
	}

	nodes, start := all, opts.StartIndex%len(all)
	if start < 0 {
		start += len(all)
	}
	if !pre.AllNodes() {
		nodes, start = make([]*framework.NodeInfo, 0, pre.NodeNames.Len()), 0
		for _, ni := range all {
			if pre.NodeNames.Has(ni.Name()) {
				nodes = append(nodes, ni)
			}
		}
		diag.AbsentNodesStatus = framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", narrowing))
		for _, n := range narrowing {
			diag.AddPluginStatus(framework.NewStatus(framework.UnschedulableAndUnresolvable).WithPlugin(n))
		}
	}

	feasible, processed, err := filter(ctx, p, snap, state, pod, nodes, start, NumFeasibleNodesToFind(p.PercentageOfNodesToScore, len(nodes)), opts.Parallelism, &diag)
	if err != nil {
		return res, err
	}
	res.EvaluatedNodes, res.FeasibleNodes = processed, len(feasible)
	if pre.AllNodes() {
		res.NextStartIndex = (start + processed) % len(all)
	}
	if len(feasible) == 0 {
		return fail(ctx, p, snap, pod, state, diag, res, len(all), opts)
	}
	if len(feasible) == 1 {
		res.Node = feasible[0].Name()
		return res, nil
	}

	if s := p.RunPreScore(ctx, state, pod, snap, feasible); !s.IsSuccess() {
		return res, s.Err()
	}
	scores, s := p.RunScore(ctx, state, pod, feasible, opts.Parallelism)
	if !s.IsSuccess() {
		return res, s.Err()
	}
	res.Node = selectHost(scores, opts.Choose)
	return res, nil
}

// filter runs the filters over nodes from start (wrapping around) until
// want nodes pass, recording the rejections in diag. With workers > 1 it
// evaluates batches concurrently but keeps exactly the nodes a sequential
// search would.
func filter(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, state *framework.CycleState, pod *v1.Pod,
	nodes []*framework.NodeInfo, start, want, workers int, diag *framework.Diagnosis) ([]*framework.NodeInfo, int, error) {
	n := len(nodes)
	feasible := make([]*framework.NodeInfo, 0, min(want, n))
	statuses := make([]*framework.Status, 0, 64)
	processed := 0
	for processed < n && len(feasible) < want {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		// Never evaluate more nodes than could still be needed (when all
		// pass), except to give parallel workers enough to do.
		minBatch := 1
		if workers > 1 {
			minBatch = 16 * workers
		}
		batch := min(n-processed, max(want-len(feasible), minBatch))
		statuses = statuses[:0]
		for range batch {
			statuses = append(statuses, nil)
		}
		base := processed
		framework.Parallelize(workers, batch, func(i int) {
			statuses[i] = p.RunFilterWithNominatedPods(ctx, state, pod, nodes[(start+base+i)%n], snap)
		})
		for i, s := range statuses {
			ni := nodes[(start+base+i)%n]
			processed++
			switch {
			case s.IsSuccess():
				feasible = append(feasible, ni)
			case s.IsRejected():
				diag.NodeToStatus[ni.Name()] = s
				diag.AddPluginStatus(s)
			default:
				return nil, 0, s.Err()
			}
			if len(feasible) == want {
				return feasible, processed, nil
			}
		}
	}
	return feasible, processed, nil
}

// selectHost returns the node with the highest total score, breaking ties
// with choose (in search order).
func selectHost(scores []framework.NodePluginScores, choose func(int) int) string {
	best := scores[0].TotalScore
	var ties []int
	for i := range scores {
		switch {
		case scores[i].TotalScore > best:
			best, ties = scores[i].TotalScore, append(ties[:0], i)
		case scores[i].TotalScore == best:
			ties = append(ties, i)
		}
	}
	pick := 0
	if choose != nil && len(ties) > 1 {
		pick = choose(len(ties))
	}
	return scores[ties[pick]].Name
}

// fail completes a failed cycle: the FitError, and preemption if enabled.
func fail(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, pod *v1.Pod, state *framework.CycleState,
	diag framework.Diagnosis, res Result, numAll int, opts Options) (Result, error) {
	if p.Preemption != nil {
		plan, s := preemption.Preempt(ctx, p, snap, pod, state, &diag, preemption.Options{
			Args: *p.Preemption, Offset: opts.StartIndex, PDBs: opts.PodDisruptionBudgets,
		})
		switch {
		case s.Code() == framework.Error:
			return res, s.Err()
		case s.IsSuccess():
			res.Preemption = &plan
		default:
			diag.PostFilterMsg = s.Message()
		}
	}
	res.Diagnosis = diag
	return res, &framework.FitError{Pod: pod, NumAllNodes: numAll, Diagnosis: diag}
}
