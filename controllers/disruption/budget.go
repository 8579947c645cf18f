package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DeletionTimeout is how long a pod the eviction API recorded in a budget's
// disruptedPods is not counted as healthy; after it the controller assumes
// the pod was not deleted after all, as upstream.
const DeletionTimeout = 2 * time.Minute

// Scale is the size a pod's controller wants: the pods of one controller
// count once towards a budget's expected pods.
type Scale struct {
	UID      types.UID // the controller's (a Deployment's for the pods of its ReplicaSets)
	Replicas int32
}

// ScaleFunc finds the scale of the controller a pod names in its
// controller reference. found is false when no such controller is known.
type ScaleFunc func(namespace string, ref *metav1.OwnerReference) (s Scale, found bool, err error)

// Result is what Compute decides for one budget.
type Result struct {
	// Status is the budget's new status (conditions included).
	Status policyv1.PodDisruptionBudgetStatus
	// Changed says whether Status differs from what is stored.
	Changed bool
	// Recheck, when not zero, is when an entry of disruptedPods expires and
	// the budget must be computed again.
	Recheck time.Time
	// Unmanaged names selected pods that have no controller: a percentage
	// or maxUnavailable cannot count them.
	Unmanaged []string
}

// Compute works out a budget's status from its pods, as upstream's
// disruption controller: the expected and the desired number of healthy
// pods, the ready pods that are not being deleted or recently evicted,
// and from those how many disruptions are allowed. An error (a pod whose
// controller cannot be found, a bad percentage) leaves the budget to the
// caller's fail-safe.
func Compute(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale ScaleFunc, now time.Time) (Result, error) {
	expected, desired, unmanaged, err := expectedPods(pdb, pods, scale)
	if err != nil {
		return Result{}, err
	}
	disrupted, recheck := liveDisruptions(pdb.Status.DisruptedPods, pods, now)
	healthy := healthyPods(pods, disrupted, now)
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		// A budget that selects nothing yet stays safe until its first
		// pods are counted.
		allowed = 0
	}
	st := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptedPods:      disrupted,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		Conditions:         append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	old := pdb.Status
	changed := old.CurrentHealthy != st.CurrentHealthy || old.DesiredHealthy != st.DesiredHealthy ||
		old.ExpectedPods != st.ExpectedPods || old.DisruptionsAllowed != st.DisruptionsAllowed ||
		!apiequality.Semantic.DeepEqual(old.DisruptedPods, st.DisruptedPods) ||
		old.ObservedGeneration != pdb.Generation || !conditionUpToDate(pdb)
	if changed {
		setAllowedCondition(&st, now)
	} else {
		st = *old.DeepCopy()
	}
	return Result{Status: st, Changed: changed, Recheck: recheck, Unmanaged: unmanaged}, nil
}

// expectedPods returns how many pods the budget expects and how many of
// them must be healthy. An integer minAvailable counts the selected pods;
// a percentage or maxUnavailable counts what their controllers want.
func expectedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale ScaleFunc) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected, unmanaged, err = controllersScale(pods, scale)
		if err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		desired = pdb.Spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case pdb.Spec.MinAvailable != nil:
		expected, unmanaged, err = controllersScale(pods, scale)
		if err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// controllersScale adds up the scale of every controller of the pods,
// each controller once; pods without a controller are returned apart.
func controllersScale(pods []*corev1.Pod, scale ScaleFunc) (int32, []string, error) {
	seen := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, ok := seen[ref.UID]; ok {
			continue
		}
		s, found, err := scale(pod.Namespace, ref)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		seen[ref.UID] = 0 // the pod's direct controller is known
		seen[s.UID] = s.Replicas
	}
	var total int32
	for _, n := range seen {
		total += n
	}
	sort.Strings(unmanaged)
	return total, unmanaged, nil
}

// liveDisruptions keeps the disruptedPods entries of pods that still
// exist, are not yet being deleted, and were evicted less than
// DeletionTimeout ago; it returns when the first of those expires.
func liveDisruptions(have map[string]metav1.Time, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Time) {
	out := map[string]metav1.Time{}
	var recheck time.Time
	for _, pod := range pods {
		at, ok := have[pod.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			continue // the eviction did not delete it: count it again
		}
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
		out[pod.Name] = at
	}
	return out, recheck
}

// healthyPods counts the ready pods that are neither being deleted nor
// recently evicted.
func healthyPods(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if podReady(pod) {
			n++
		}
	}
	return n
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// conditionUpToDate says whether the stored DisruptionAllowed condition
// agrees with the stored status, as upstream's helper.
func conditionUpToDate(pdb *policyv1.PodDisruptionBudget) bool {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || pdb.Status.ObservedGeneration != pdb.Generation {
		return false
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return c.Status == metav1.ConditionTrue && c.Reason == policyv1.SufficientPodsReason
	}
	return c.Status == metav1.ConditionFalse && c.Reason == policyv1.InsufficientPodsReason
}

// setAllowedCondition sets DisruptionAllowed from disruptionsAllowed.
func setAllowedCondition(st *policyv1.PodDisruptionBudgetStatus, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, ObservedGeneration: st.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if st.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	} else {
		c.Status, c.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	apimeta.SetStatusCondition(&st.Conditions, c)
}

// FailSafe returns the status of a budget whose status could not be
// computed: no disruptions allowed, and the condition says why.
func FailSafe(pdb *policyv1.PodDisruptionBudget, cause error, now time.Time) policyv1.PodDisruptionBudgetStatus {
	st := *pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason,
		Message: cause.Error(), ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
	return st
}
