package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// maxDisruptedPods bounds a budget's status.disruptedPods, as upstream:
// past it, evictions the disruption controller has not yet seen are refused.
const maxDisruptedPods = 2000

// evictionAttempts bounds the retries of an eviction that conflicts with
// other writers of the pod or the budget.
const evictionAttempts = 20

// The messages of refused evictions, as upstream words them.
const (
	msgViolatesBudget = "Cannot evict pod as it would violate the pod's disruption budget."
	msgManyBudgets    = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)

var pdbGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// evict answers POST pods/NAME/eviction as upstream's EvictionREST: pods
// that cannot disrupt anything (not running, or already going) are
// deleted at once; otherwise the pod's one PodDisruptionBudget must allow
// a disruption, which the eviction takes from its status before the pod
// is deleted. A budget that allows none answers 429, and clients such as
// `kubectl drain` try again.
func (s *Server) evict(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	ctx := r.Context()
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ev := &policyv1.Eviction{}
	if _, err := decodeRequest(r, body, ev, metav1.FieldValidationStrict); err != nil {
		return err
	}
	if gv := ev.APIVersion; gv != "" && gv != "policy/v1" && gv != "policy/v1beta1" {
		return apierrors.NewBadRequest(fmt.Sprintf("unsupported apiVersion %q for Eviction: use policy/v1 or policy/v1beta1", gv))
	}
	if ev.Name != ri.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if ev.Namespace != "" && ev.Namespace != ri.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	ev.Namespace = ri.Namespace
	opts, err := evictionDeleteOptions(ev, r.URL.Query()["dryRun"])
	if err != nil {
		return err
	}
	isDryRun := len(opts.DryRun) > 0
	if err := s.admit(ctx, res, auth.Create, ev, nil, string(resource.Eviction), isDryRun); err != nil {
		return err
	}
	status, err := s.evictPod(ctx, res, ri.Namespace, ri.Name, opts)
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Code == http.StatusTooManyRequests {
		// As upstream, the budget's 429 carries no Retry-After: clients
		// such as kubectl drain see it at once and pace their own retries.
		st := se.Status()
		st.Kind, st.APIVersion = "Status", "v1"
		out, nerr := negotiate(r)
		if nerr != nil || out.protobuf {
			out = output{pretty: prettyPrint(r)}
		}
		out.kind = outObject
		writeOut(w, out, http.StatusTooManyRequests, &st)
		return nil
	}
	if err != nil {
		return err
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return writeNegotiated(w, r, int(status.Code), status)
}

// evictionDeleteOptions merges the dry run of the create request into the
// eviction's DeleteOptions, refusing two that differ, and validates them.
func evictionDeleteOptions(ev *policyv1.Eviction, dryRun []string) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		opts = ev.DeleteOptions.DeepCopy()
	}
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = dryRun
	case len(dryRun) > 0 && !reflect.DeepEqual(dryRun, opts.DryRun):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("DryRun in DeleteOptions doesn't match the DryRun in CreateOptions: %v != %v", opts.DryRun, dryRun))
	}
	if err := validateDeleteOptions(opts); err != nil {
		return nil, err
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return opts, nil
}

// evictPod does the eviction and returns the Status to answer with.
func (s *Server) evictPod(ctx context.Context, podRes *resource.Resource, ns, name string, opts *metav1.DeleteOptions) (*metav1.Status, error) {
	pinnedRV := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil && *opts.Preconditions.ResourceVersion != ""
	var pod *corev1.Pod
	for attempt := 0; ; attempt++ {
		obj, _, err := s.getObject(ctx, podRes, ns, name)
		if err != nil {
			return nil, err
		}
		pod = obj.(*corev1.Pod)
		if !budgetIgnorable(pod) {
			break
		}
		// A pod that is not running disrupts nothing: delete it, pinned to
		// the version read so that it cannot have started meanwhile.
		del := opts
		if enforceVersion(pod) && !pinnedRV {
			del = withVersion(opts, pod.ResourceVersion)
		}
		err = s.markAndDelete(ctx, podRes, ns, name, del)
		if apierrors.IsConflict(err) && !pinnedRV && attempt < evictionAttempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		return evictedStatus(), nil
	}

	pdbRes, ok := s.table.get(pdbGVR)
	if !ok {
		// Without budgets served, nothing guards the pod.
		return s.evictDelete(ctx, podRes, ns, name, opts, false, "")
	}
	pdbs, err := s.budgetsFor(ctx, pdbRes, pod)
	if err != nil {
		return nil, err
	}
	switch len(pdbs) {
	case 0:
		return s.evictDelete(ctx, podRes, ns, name, opts, false, "")
	case 1:
	default:
		return &metav1.Status{Status: metav1.StatusFailure, Message: msgManyBudgets, Code: http.StatusInternalServerError}, nil
	}
	pdb := pdbs[0]
	if !podReady(pod) && unhealthyEvictable(pdb) {
		// An unready pod adds nothing to the budget's health: it goes
		// without taking a disruption, pinned to the version read so that
		// it cannot have become ready meanwhile.
		pinned := opts
		if !pinnedRV {
			pinned = withVersion(opts, pod.ResourceVersion)
		}
		return s.evictDelete(ctx, podRes, ns, name, pinned, !pinnedRV, pdb.Name)
	}
	isDryRun := len(opts.DryRun) > 0
	_, err = s.guaranteedUpdate(ctx, pdbRes, ns, pdb.Name, string(resource.Status), isDryRun, func(cur runtime.Object) (runtime.Object, error) {
		b := cur.(*policyv1.PodDisruptionBudget)
		if err := takeDisruption(b, pod.Name, time.Now(), isDryRun); err != nil {
			return nil, err
		}
		b.ResourceVersion = ""
		return b, nil
	})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdb.Name), 10)
		}
		return nil, err
	}
	return s.evictDelete(ctx, podRes, ns, name, opts, false, pdb.Name)
}

// evictDelete deletes the pod once the budget allows it. A conflict on a
// resourceVersion the server pinned itself answers 429, so that the
// client tries again, as upstream.
func (s *Server) evictDelete(ctx context.Context, podRes *resource.Resource, ns, name string, opts *metav1.DeleteOptions, serverPinned bool, pdbName string) (*metav1.Status, error) {
	err := s.markAndDelete(ctx, podRes, ns, name, opts)
	if apierrors.IsConflict(err) && serverPinned {
		return nil, budgetBusy(pdbName)
	}
	if err != nil {
		return nil, err
	}
	return evictedStatus(), nil
}

func evictedStatus() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
}

// markAndDelete gives the pod the DisruptionTarget condition, as upstream
// does before an eviction deletes it, then deletes it.
func (s *Server) markAndDelete(ctx context.Context, podRes *resource.Resource, ns, name string, opts *metav1.DeleteOptions) error {
	if len(opts.DryRun) == 0 {
		result, err := s.guaranteedUpdate(ctx, podRes, ns, name, string(resource.Status), false, func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.(*corev1.Pod)
			if err := checkPreconditions(podRes, pod, opts.Preconditions); err != nil {
				return nil, err
			}
			setDisruptionTarget(pod, time.Now())
			pod.ResourceVersion = ""
			return pod, nil
		})
		if err != nil {
			return err
		}
		if p := opts.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != "" {
			// The condition is our own change: the delete checks the
			// version it made.
			rv := result.obj.(*corev1.Pod).ResourceVersion
			opts = withVersion(opts, rv)
		}
	}
	_, err := s.deleteObject(ctx, podRes, ns, name, opts)
	return err
}

// checkPreconditions refuses a pod that is not the one the delete options
// name.
func checkPreconditions(res *resource.Resource, pod *corev1.Pod, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
		return apierrors.NewConflict(res.GroupResource(), pod.Name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, pod.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
		return apierrors.NewConflict(res.GroupResource(), pod.Name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, pod.ResourceVersion))
	}
	return nil
}

// setDisruptionTarget sets the pod's DisruptionTarget condition to say the
// eviction API is evicting it, keeping the transition time when it was
// already so.
func setDisruptionTarget(pod *corev1.Pod, now time.Time) {
	c := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
		Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	for i, have := range pod.Status.Conditions {
		if have.Type == c.Type {
			if have.Status == c.Status {
				c.LastTransitionTime = have.LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// withVersion returns a copy of opts whose preconditions pin rv.
func withVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	out := opts.DeepCopy()
	if out.Preconditions == nil {
		out.Preconditions = &metav1.Preconditions{}
	}
	out.Preconditions.ResourceVersion = &rv
	return out
}

// budgetsFor lists the budgets in the pod's namespace whose selector
// matches it.
func (s *Server) budgetsFor(ctx context.Context, pdbRes *resource.Resource, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	objs, _, err := s.listObjects(ctx, pdbRes, prefixFor(pdbRes, pod.Namespace), listRequest{sel: selection{everything: true}})
	if err != nil {
		return nil, err
	}
	all := make([]*policyv1.PodDisruptionBudget, 0, len(objs))
	for _, o := range objs {
		all = append(all, o.(*policyv1.PodDisruptionBudget))
	}
	return matchingBudgets(pod, all), nil
}

// matchingBudgets returns the budgets of pdbs that guard pod. As in
// policy/v1, a nil selector matches nothing and an empty one every pod of
// the namespace.
func matchingBudgets(pod *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

// budgetIgnorable: a pod that has finished, has not started, or is already
// being deleted is evicted without asking its budget, as upstream.
func budgetIgnorable(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// enforceVersion: deleting a pod the budget was skipped for is pinned to
// the version read, unless it has finished or is going anyway.
func enforceVersion(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	return pod.DeletionTimestamp == nil
}

// unhealthyEvictable says whether the budget lets an unready pod go
// without taking a disruption: always under AlwaysAllow; under
// IfHealthyBudget (the default) only while the budget is met.
func unhealthyEvictable(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// podReady reports the pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var pdbGR = schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}

// errNegativeBudget and errTooManyDisrupted are the budget states an
// eviction refuses with 403, as upstream.
var (
	errNegativeBudget   = errors.New("pdb disruptions allowed is negative")
	errTooManyDisrupted = errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller")
)

// takeDisruption checks that the budget allows one more disruption and
// takes it: disruptionsAllowed goes down by one and, unless this is a dry
// run, the pod is recorded in disruptedPods so that the disruption
// controller does not count it as healthy while it goes.
func takeDisruption(pdb *policyv1.PodDisruptionBudget, podName string, now time.Time, isDryRun bool) error {
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		return budgetBusy(pdb.Name)
	case pdb.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(pdbGR, pdb.Name, errNegativeBudget)
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		return apierrors.NewForbidden(pdbGR, pdb.Name, errTooManyDisrupted)
	case pdb.Status.DisruptionsAllowed == 0:
		return budgetViolated(pdb.Name, fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
			pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		setBudgetCondition(pdb, now)
	}
	if isDryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.NewTime(now)
	return nil
}

// setBudgetCondition sets DisruptionAllowed from disruptionsAllowed, as
// upstream's helper does when an eviction takes the last one.
func setBudgetCondition(pdb *policyv1.PodDisruptionBudget, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, ObservedGeneration: pdb.Status.ObservedGeneration,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if pdb.Status.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	} else {
		c.Status, c.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	apimeta.SetStatusCondition(&pdb.Status.Conditions, c)
}

// budgetViolated is the 429 of an eviction the budget does not allow.
func budgetViolated(pdbName, cause string) error {
	err := apierrors.NewTooManyRequests(msgViolatesBudget, 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// budgetBusy is the 429 of an eviction whose budget the disruption
// controller has not caught up with.
func budgetBusy(pdbName string) error {
	return budgetViolated(pdbName, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbName))
}
