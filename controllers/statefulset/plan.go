package statefulset

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pure core of a sync: the set, the revisions it runs, its pods and
// their claims in, the writes to make and the status out. It follows
// upstream's StatefulSet control loop: bring every ordinal in range up
// (in order, one at a time and each Running and Ready before the next,
// under OrderedReady; all at once under Parallel), then delete the pods
// above the range (from the highest ordinal, one at a time, under
// OrderedReady), then roll pods that are not at the update revision over
// from the highest ordinal down to the partition.

// actionKind is what an action writes.
type actionKind int

const (
	// createPod creates the action's claims that are missing, then its pod.
	createPod actionKind = iota
	// deletePod deletes a pod: finished, condemned, or at an old revision.
	deletePod
	// updatePod writes a pod whose identity labels drifted.
	updatePod
	// createClaims creates the missing claims of a pending pod.
	createClaims
	// updateClaims rewrites claims' owner references (retention policy).
	updateClaims
)

func (k actionKind) String() string {
	return [...]string{"create", "delete", "update", "create claims", "update claims"}[k]
}

// phase orders the actions: under Parallel the actions of one phase run
// at once, and a phase runs only when the ones before it succeeded.
type phase int

const (
	phaseReplicas phase = iota
	phaseClaimOwners
	phaseCondemned
	phaseUpdate
)

type action struct {
	kind   actionKind
	phase  phase
	pod    *corev1.Pod
	claims []*corev1.PersistentVolumeClaim
	why    string
}

// state is a sync's input.
type state struct {
	set *appsv1.StatefulSet
	// current and update are the revision names; currentSet and updateSet
	// are set with their templates.
	current, update       string
	currentSet, updateSet *appsv1.StatefulSet
	pods                  []*corev1.Pod
	// claims holds the existing claims by name.
	claims map[string]*corev1.PersistentVolumeClaim
	now    time.Time
}

// plan is a sync's output.
type plan struct {
	actions []action
	// sequential: OrderedReady; stop at the first failed action.
	sequential bool
	status     appsv1.StatefulSetStatus
	// requeueAfter asks for another sync: a pod becomes available then, or
	// a claim being deleted blocks a pod.
	requeueAfter time.Duration
}

// claimRetry is how soon a pod blocked by a claim still being deleted is
// tried again.
const claimRetry = time.Second

type planner struct {
	state
	plan
	minReady   int32
	start      int
	monotonic  bool
	replicas   []*corev1.Pod
	condemned  []*corev1.Pod
	unhealthy1 *corev1.Pod // the first unhealthy pod: the one scale-down may take out of order
}

// makePlan computes the writes of one sync and the status to report.
func makePlan(s state) plan {
	p := &planner{state: s, minReady: s.set.Spec.MinReadySeconds, start: startOrdinal(s.set)}
	p.monotonic = s.set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	p.sequential = p.monotonic
	n := replicaCount(s.set)
	p.replicas = make([]*corev1.Pod, n)
	for _, pod := range s.pods {
		o := ordinalOf(pod)
		switch {
		case o >= p.start && o < p.start+n:
			p.replicas[o-p.start] = pod
		case o >= 0:
			p.condemned = append(p.condemned, pod)
		}
	}
	p.status = p.computeStatus()
	for i := range p.replicas {
		if p.replicas[i] == nil {
			p.replicas[i] = p.versionedPod(p.start + i)
		}
	}
	slices.SortFunc(p.condemned, func(a, b *corev1.Pod) int { return ordinalOf(b) - ordinalOf(a) })
	for _, pod := range append(slices.Clone(p.replicas), p.condemned...) {
		if !isHealthy(pod, p.minReady, s.now) {
			p.unhealthy1 = pod
			break
		}
	}
	p.noteAvailability()
	if s.set.DeletionTimestamp == nil {
		p.run()
	}
	p.completeRollingUpdate()
	return p.plan
}

// run appends the actions; it returns where OrderedReady must wait.
func (p *planner) run() {
	for i := range p.replicas {
		if p.replica(i) && p.monotonic {
			return
		}
	}
	for _, c := range p.condemned {
		if fix := p.claimOwnerFixes(c); len(fix) > 0 {
			p.add(action{kind: updateClaims, phase: phaseClaimOwners, pod: c, claims: fix, why: "retention policy"})
		}
	}
	for _, c := range p.condemned {
		if p.condemn(c) && p.monotonic {
			return
		}
	}
	if p.set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return
	}
	p.rollingUpdate()
}

func (p *planner) add(a action) { p.actions = append(p.actions, a) }

// replica handles the pod of one ordinal in range and reports whether
// OrderedReady must stop there.
func (p *planner) replica(i int) bool {
	pod := p.replicas[i]
	if isFinished(pod) {
		// Delete and recreate (in a later sync) a pod that finished.
		if !isTerminating(pod) {
			p.add(action{kind: deletePod, phase: phaseReplicas, pod: pod, why: "finished"})
		}
		return true
	}
	if !isCreated(pod) {
		missing, blocked := p.missingClaims(pod)
		if blocked {
			p.requeueAfter = minPositive(p.requeueAfter, claimRetry)
			return true
		}
		p.add(action{kind: createPod, phase: phaseReplicas, pod: pod, claims: missing})
		return true
	}
	if isPending(pod) {
		if missing, blocked := p.missingClaims(pod); !blocked && len(missing) > 0 {
			p.add(action{kind: createClaims, phase: phaseReplicas, pod: pod, claims: missing})
		}
	}
	if p.monotonic && (isTerminating(pod) || !isAvailable(pod, p.minReady, p.now)) {
		return true
	}
	if !identityMatches(p.set, pod) {
		fixed := pod.DeepCopy()
		updateIdentity(p.set, fixed)
		p.add(action{kind: updatePod, phase: phaseReplicas, pod: fixed, why: "identity"})
	}
	if fix := p.claimOwnerFixes(pod); len(fix) > 0 {
		p.add(action{kind: updateClaims, phase: phaseReplicas, pod: pod, claims: fix, why: "retention policy"})
	}
	return false
}

// condemn deletes a pod above the range and reports whether OrderedReady
// must stop there.
func (p *planner) condemn(c *corev1.Pod) bool {
	if isTerminating(c) {
		return true
	}
	if p.monotonic && c != p.unhealthy1 && !isAvailable(c, p.minReady, p.now) {
		// Scale down one healthy pod at a time, waiting on the others.
		return true
	}
	p.add(action{kind: deletePod, phase: phaseCondemned, pod: c, why: "scale down"})
	return true
}

// rollingUpdate deletes pods not at the update revision, from the highest
// ordinal down to the partition; they come back at the update revision.
func (p *planner) rollingUpdate() {
	ru := p.set.Spec.UpdateStrategy.RollingUpdate
	updateMin := 0
	if ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	if ru == nil || ru.MaxUnavailable == nil {
		// One at a time, waiting for every pod from the top down to be
		// healthy.
		for t := len(p.replicas) - 1; t >= updateMin; t-- {
			pod := p.replicas[t]
			if isCreated(pod) && podRevision(pod) != p.update && !isTerminating(pod) {
				p.add(action{kind: deletePod, phase: phaseUpdate, pod: pod, why: "update"})
				p.status.CurrentReplicas--
				return
			}
			if !isHealthy(pod, p.minReady, p.now) {
				return
			}
		}
		return
	}
	maxUnavailable := scaledMaxUnavailable(*ru.MaxUnavailable, len(p.replicas))
	unavailable := 0
	for _, pod := range p.replicas {
		if !isHealthy(pod, p.minReady, p.now) {
			unavailable++
		}
	}
	budget := maxUnavailable - unavailable
	for t := len(p.replicas) - 1; t >= updateMin && budget > 0; t-- {
		pod := p.replicas[t]
		if isCreated(pod) && podRevision(pod) != p.update && !isTerminating(pod) {
			p.add(action{kind: deletePod, phase: phaseUpdate, pod: pod, why: "update"})
			p.status.CurrentReplicas--
			budget--
		}
	}
}

// scaledMaxUnavailable resolves maxUnavailable against the replica count,
// rounding down, and never below one.
func scaledMaxUnavailable(v intstr.IntOrString, replicas int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// versionedPod builds the pod of ordinal: at the current revision when a
// rolling update has not reached it (below the partition), else at the
// update revision.
func (p *planner) versionedPod(ordinal int) *corev1.Pod {
	cs := p.currentSet
	if cs.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		ru := cs.Spec.UpdateStrategy.RollingUpdate
		partition := 0
		switch {
		case ru == nil:
			partition = int(cs.Status.CurrentReplicas)
		case ru.Partition != nil:
			partition = int(*ru.Partition)
		}
		if ordinal < p.start+partition {
			return newPod(cs, ordinal, p.current)
		}
	}
	return newPod(p.updateSet, ordinal, p.update)
}

// missingClaims returns the claims pod needs that do not exist yet, with
// owners set by the retention policy; blocked when an existing claim is
// being deleted or still belongs to an earlier pod of the same name.
func (p *planner) missingClaims(pod *corev1.Pod) ([]*corev1.PersistentVolumeClaim, bool) {
	var missing []*corev1.PersistentVolumeClaim
	for _, c := range claimsFor(p.set, ordinalOf(pod)) {
		have, ok := p.claims[c.Name]
		if !ok {
			setClaimOwners(p.set, pod, c)
			missing = append(missing, c)
			continue
		}
		if have.DeletionTimestamp != nil || staleClaim(p.set, pod, have) {
			return nil, true
		}
	}
	return missing, false
}

// claimOwnerFixes returns copies of pod's existing claims with their owner
// references rewritten, for those that do not follow the retention policy.
func (p *planner) claimOwnerFixes(pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, want := range claimsFor(p.set, ordinalOf(pod)) {
		have, ok := p.claims[want.Name]
		if !ok || have.DeletionTimestamp != nil || claimOwnersMatch(p.set, pod, have) {
			continue
		}
		fixed := have.DeepCopy()
		if setClaimOwners(p.set, pod, fixed) {
			out = append(out, fixed)
		}
	}
	return out
}

// computeStatus counts the existing pods, as upstream: replicas that
// exist, ready and available ones, and those (not being deleted) at the
// current and at the update revision.
func (p *planner) computeStatus() appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{
		ObservedGeneration: p.set.Generation,
		CurrentRevision:    p.current,
		UpdateRevision:     p.update,
		CollisionCount:     p.set.Status.CollisionCount,
	}
	for _, pod := range append(slices.Clone(p.replicas), p.condemned...) {
		if pod == nil || !isCreated(pod) {
			continue
		}
		st.Replicas++
		if isRunningAndReady(pod) {
			st.ReadyReplicas++
			if isAvailable(pod, p.minReady, p.now) {
				st.AvailableReplicas++
			}
		}
		if !isTerminating(pod) {
			switch podRevision(pod) {
			case p.current:
				st.CurrentReplicas++
				if p.current == p.update {
					st.UpdatedReplicas++
				}
			case p.update:
				st.UpdatedReplicas++
			}
		}
	}
	return st
}

// completeRollingUpdate makes the update revision current once every pod
// is at it and ready.
func (p *planner) completeRollingUpdate() {
	st := &p.status
	if p.set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas && int(st.Replicas) == replicaCount(p.set) {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}

// noteAvailability asks for a sync when a ready pod becomes available.
func (p *planner) noteAvailability() {
	if p.minReady <= 0 {
		return
	}
	for _, pod := range append(slices.Clone(p.replicas), p.condemned...) {
		if !isRunningAndReady(pod) || isAvailable(pod, p.minReady, p.now) {
			continue
		}
		at := readyCondition(pod).LastTransitionTime.Add(time.Duration(p.minReady) * time.Second)
		p.requeueAfter = minPositive(p.requeueAfter, at.Sub(p.now))
	}
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case b <= 0:
		return a
	case a <= 0:
		return b
	}
	return min(a, b)
}
