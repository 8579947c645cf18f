// Package preemption finds room for a pod that fits nowhere by evicting
// lower-priority pods, as upstream's DefaultPreemption does: on each node
// where evicting could help it removes every lower-priority pod, checks
// the pod then fits, and gives back ("reprieves") as many of them as still
// lets it fit, highest priority first and PodDisruptionBudget-protected
// pods before others; among the nodes that work it picks the one with the
// fewest PDB violations, then the lowest highest-victim priority, the
// smallest sum of victim priorities, the fewest victims, and the most
// recently started highest-priority victims.
//
// It is pure: it simulates on copies of the snapshot's NodeInfos and
// returns the plan. The caller's duties: delete the victims (gracefully,
// with the DisruptionTarget condition), set the preemptor's
// status.nominatedNodeName and add it to the snapshot with
// Snapshot.AddNominatedPod, and clear the nominations in
// Result.ClearNominated.
package preemption

import (
	"context"
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
)

const (
	// MsgNotHelpful is the reason for nodes where evicting pods cannot help
	// (the filters rejected them unresolvably).
	MsgNotHelpful = "Preemption is not helpful for scheduling"
	// MsgNoVictims is the reason for nodes without lower-priority pods.
	MsgNoVictims = "No preemption victims found for incoming pod"
	// MsgPreemptNever is the message for a pod with preemptionPolicy Never.
	MsgPreemptNever = "not eligible due to preemptionPolicy=Never."
	// MsgTerminating is the message for a pod whose nominated node still has
	// a victim terminating.
	MsgTerminating = "not eligible due to a terminating pod on the nominated node."
)

// Options are the inputs besides the profile, snapshot and pod.
type Options struct {
	// Args bound the number of candidate nodes dry-run.
	Args framework.PreemptionArgs
	// Offset rotates where the dry run starts among the candidate nodes
	// (upstream picks it at random; passing it keeps the result a
	// function of the inputs).
	Offset int
	// PDBs are the PodDisruptionBudgets to respect where possible.
	PDBs []*policyv1.PodDisruptionBudget
}

// Result is a preemption plan.
type Result struct {
	// NominatedNode is where the pod will fit once Victims are gone.
	NominatedNode string
	// Victims are the pods to evict from NominatedNode, highest priority
	// first.
	Victims []*v1.Pod
	// NumPDBViolations counts victims whose eviction exceeds a budget.
	NumPDBViolations int
	// ClearNominated are lower-priority pods nominated to NominatedNode;
	// their nomination no longer holds.
	ClearNominated []*v1.Pod
}

// Preempt plans the eviction that makes room for pod, which the cycle
// found to fit nowhere with the given diagnosis. state is the cycle's
// state after PreFilter (nil runs PreFilter again). It returns Success
// with a plan, or Unschedulable with the "preemption: ..." message that
// completes the FailedScheduling message, or Error.
func Preempt(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, pod *v1.Pod, state *framework.CycleState, diag *framework.Diagnosis, opts Options) (Result, *framework.Status) {
	res, s := preempt(ctx, p, snap, pod, state, diag, opts)
	if s.IsRejected() {
		return res, framework.NewStatus(s.Code(), "preemption: "+s.Message())
	}
	return res, s
}

func preempt(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, pod *v1.Pod, state *framework.CycleState, diag *framework.Diagnosis, opts Options) (Result, *framework.Status) {
	if ok, msg := eligible(snap, pod, diag); !ok {
		return Result{}, framework.NewStatus(framework.Unschedulable, msg)
	}
	all := snap.NodeInfos()
	if state == nil {
		state = framework.NewCycleState()
		if _, s, _ := p.RunPreFilter(ctx, state, pod, snap); !s.IsSuccess() && !s.IsRejected() {
			return Result{}, s
		}
	}

	statuses := make(map[string]*framework.Status, len(all))
	var potential []*framework.NodeInfo
	for _, ni := range all {
		if diag.NodeStatus(ni.Name()).Code() == framework.UnschedulableAndUnresolvable {
			statuses[ni.Name()] = framework.NewStatus(framework.UnschedulableAndUnresolvable, MsgNotHelpful)
			continue
		}
		potential = append(potential, ni)
	}

	var candidates []candidate
	if len(potential) > 0 {
		want := numCandidates(opts.Args, len(potential))
		nonViolating := 0
		offset := opts.Offset % len(potential)
		if offset < 0 {
			offset += len(potential)
		}
		for i := range potential {
			if err := ctx.Err(); err != nil {
				return Result{}, framework.AsStatus(err)
			}
			ni := potential[(offset+i)%len(potential)]
			victims, violations, s := selectVictims(ctx, p, snap, state.Clone(), pod, ni.Clone(), opts.PDBs)
			if s.Code() == framework.Error {
				return Result{}, s
			}
			if !s.IsSuccess() {
				statuses[ni.Name()] = s
				continue
			}
			candidates = append(candidates, candidate{node: ni.Name(), victims: victims, violations: violations})
			if violations == 0 {
				nonViolating++
			}
			if nonViolating > 0 && len(candidates) >= want {
				break
			}
		}
	}
	if len(candidates) == 0 {
		fe := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		return Result{}, framework.NewStatus(framework.Unschedulable, fe.Error())
	}
	best := pick(candidates)
	res := Result{NominatedNode: best.node, Victims: best.victims, NumPDBViolations: best.violations}
	prio := framework.PodPriority(pod)
	for _, npi := range snap.NominatedPods(best.node) {
		if framework.PodPriority(npi.Pod) < prio && framework.PodKey(npi.Pod) != framework.PodKey(pod) {
			res.ClearNominated = append(res.ClearNominated, npi.Pod)
		}
	}
	return res, nil
}

// eligible reports whether pod may preempt: not with preemptionPolicy
// Never, and not while a lower-priority pod on its nominated node is still
// terminating because of an earlier preemption (unless that node is now
// unresolvable).
func eligible(snap *framework.Snapshot, pod *v1.Pod, diag *framework.Diagnosis) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, MsgPreemptNever
	}
	name := pod.Status.NominatedNodeName
	if name == "" || diag.NodeStatus(name).Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni := snap.Get(name); ni != nil {
		prio := framework.PodPriority(pod)
		for _, pi := range ni.Pods {
			if framework.PodPriority(pi.Pod) < prio && terminatingByPreemption(pi.Pod) {
				return false, MsgTerminating
			}
		}
	}
	return true, ""
}

func terminatingByPreemption(pod *v1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// numCandidates is the share of the potential nodes to dry-run, with a
// floor, at most all of them.
func numCandidates(a framework.PreemptionArgs, n int) int {
	c := n * int(a.MinCandidateNodesPercentage) / 100
	c = max(c, int(a.MinCandidateNodesAbsolute))
	return max(1, min(c, n))
}

// selectVictims simulates preemption on ni (a copy) with state (a copy).
func selectVictims(ctx context.Context, p *framework.Profile, snap *framework.Snapshot, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *framework.Status) {
	remove := func(pi *framework.PodInfo) *framework.Status {
		if err := ni.RemovePod(pi.Pod); err != nil {
			return framework.AsStatus(err)
		}
		return p.RunPreFilterRemovePod(ctx, state, pod, pi, ni)
	}
	add := func(pi *framework.PodInfo) *framework.Status {
		ni.AddPodInfo(pi)
		return p.RunPreFilterAddPod(ctx, state, pod, pi, ni)
	}
	prio := framework.PodPriority(pod)
	var potential []*framework.PodInfo
	for _, pi := range append([]*framework.PodInfo(nil), ni.Pods...) {
		if framework.PodPriority(pi.Pod) < prio {
			potential = append(potential, pi)
			if s := remove(pi); !s.IsSuccess() {
				return nil, 0, s
			}
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, MsgNoVictims)
	}
	// Not even evicting every lower-priority pod helps.
	if s := p.RunFilterWithNominatedPods(ctx, state, pod, ni, snap); !s.IsSuccess() {
		return nil, 0, s
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportant(potential[i].Pod, potential[j].Pod) })
	violating, nonViolating := splitByPDB(potential, pdbs)

	var victims []*v1.Pod
	violations := 0
	reprieve := func(pi *framework.PodInfo) (bool, *framework.Status) {
		if s := add(pi); !s.IsSuccess() {
			return false, s
		}
		s := p.RunFilterWithNominatedPods(ctx, state, pod, ni, snap)
		if s.Code() == framework.Error {
			return false, s
		}
		if s.IsSuccess() {
			return true, nil
		}
		if s := remove(pi); !s.IsSuccess() {
			return false, s
		}
		victims = append(victims, pi.Pod)
		return false, nil
	}
	for _, pi := range violating {
		fits, s := reprieve(pi)
		if s != nil {
			return nil, 0, s
		}
		if !fits {
			violations++
		}
	}
	for _, pi := range nonViolating {
		if _, s := reprieve(pi); s != nil {
			return nil, 0, s
		}
	}
	if len(victims) == 0 {
		return nil, 0, framework.AsStatus(fmt.Errorf("preemption: pod fits on node %q without evicting anyone", ni.Name()))
	}
	if len(violating) > 0 && len(nonViolating) > 0 {
		sort.SliceStable(victims, func(i, j int) bool { return moreImportant(victims[i], victims[j]) })
	}
	return victims, violations, nil
}

// moreImportant orders pods by priority, then by start time (earlier
// first; a pod not started yet counts as starting last).
func moreImportant(a, b *v1.Pod) bool {
	pa, pb := framework.PodPriority(a), framework.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startNanos(a) < startNanos(b)
}

func startNanos(p *v1.Pod) int64 {
	if p.Status.StartTime == nil {
		return math.MaxInt64
	}
	return p.Status.StartTime.UnixNano()
}

// splitByPDB separates the pods whose eviction would exceed a matching
// budget's disruptionsAllowed (counting down as pods are taken in order).
func splitByPDB(pods []*framework.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	selectors := make([]labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
		if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil {
			selectors[i] = s
		}
	}
	for _, pi := range pods {
		pod := pi.Pod
		violated := false
		if len(pod.Labels) > 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != pod.Namespace || selectors[i] == nil || selectors[i].Empty() || !selectors[i].Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, done := pdb.Status.DisruptedPods[pod.Name]; done {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violated = true
				}
			}
		}
		if violated {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}

type candidate struct {
	node       string
	victims    []*v1.Pod // highest priority first
	violations int
}

// pick applies upstream's tie-breakers in order, keeping dry-run order
// among equals.
func pick(cs []candidate) candidate {
	scores := []func(c *candidate) int64{
		func(c *candidate) int64 { return -int64(c.violations) },
		func(c *candidate) int64 { return -int64(framework.PodPriority(c.victims[0])) },
		func(c *candidate) int64 {
			var sum int64
			for _, v := range c.victims {
				sum += int64(framework.PodPriority(v)) + math.MaxInt32 + 1
			}
			return -sum
		},
		func(c *candidate) int64 { return -int64(len(c.victims)) },
		func(c *candidate) int64 {
			// The earliest start among the highest-priority victims: the
			// later it is, the less work is lost.
			top := framework.PodPriority(c.victims[0])
			earliest := int64(math.MaxInt64)
			for _, v := range c.victims {
				if framework.PodPriority(v) == top {
					earliest = min(earliest, startNanos(v))
				}
			}
			return earliest
		},
	}
	for _, f := range scores {
		best := int64(math.MinInt64)
		var kept []candidate
		for i := range cs {
			s := f(&cs[i])
			if s > best {
				best, kept = s, kept[:0]
			}
			if s == best {
				kept = append(kept, cs[i])
			}
		}
		if len(kept) == 1 {
			return kept[0]
		}
		cs = kept
	}
	return cs[0]
}
