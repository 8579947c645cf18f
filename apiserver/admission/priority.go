package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// The built-in priority classes every cluster has, as upstream (the API
// server creates their objects at bootstrap).
const (
	SystemClusterCritical        = "system-cluster-critical"
	SystemNodeCritical           = "system-node-critical"
	SystemCriticalPriority int32 = 2000000000
	schedulingGroup              = "scheduling.k8s.io"
)

// systemPriority holds the fixed values of the built-in classes.
var systemPriority = map[string]int32{
	SystemClusterCritical: SystemCriticalPriority,
	SystemNodeCritical:    SystemCriticalPriority + 1000,
}

// ErrNoPriorityClass is what a PriorityClasses returns for a missing class.
var ErrNoPriorityClass = errors.New("admission: no such PriorityClass")

// PriorityClasses reads the cluster's PriorityClasses as they are stored
// now: a class created just before a pod must be seen by that pod's
// admission, so implementations must not serve from a lagging cache.
type PriorityClasses interface {
	// Get returns one class, or an error wrapping ErrNoPriorityClass.
	Get(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)
	// List returns every class.
	List(ctx context.Context) ([]*schedulingv1.PriorityClass, error)
}

// Priority is upstream's Priority admission plugin.
//
// On pod CREATE it resolves spec.priorityClassName to spec.priority and
// spec.preemptionPolicy: a named class must exist (403 otherwise); a pod
// without a name gets the globalDefault class (its name, value and policy)
// or, when none is marked, priority 0 and PreemptLowerPriority. A pod that
// sets spec.priority or spec.preemptionPolicy itself to something else than
// the class gives is rejected with 403. On pod UPDATE it carries priority
// and preemption policy over from the stored pod when the update leaves them
// out.
//
// On PriorityClass CREATE and UPDATE it refuses a second globalDefault
// class, and it refuses to DELETE the two system classes (upstream's
// PriorityClass storage does the latter).
type Priority struct {
	Classes PriorityClasses
}

var _ auth.Admitter = Priority{}

var (
	podsResource            = schema.GroupResource{Resource: "pods"}
	priorityClassesResource = schema.GroupResource{Group: schedulingGroup, Resource: "priorityclasses"}
)

// Admit implements auth.Admitter.
func (p Priority) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	if req.Subresource != "" {
		return nil
	}
	switch {
	case req.Attributes.APIGroup == "" && req.Attributes.Resource == "pods":
		pod, ok := req.Object.(*corev1.Pod)
		if !ok {
			return nil
		}
		switch req.Operation {
		case auth.Create:
			return p.admitPodCreate(ctx, req.Attributes.Name, pod)
		case auth.Update:
			if old, ok := req.OldObject.(*corev1.Pod); ok {
				carryOverPriority(pod, old)
			}
		}
	case req.Attributes.APIGroup == schedulingGroup && req.Attributes.Resource == "priorityclasses":
		switch req.Operation {
		case auth.Create, auth.Update:
			if pc, ok := req.Object.(*schedulingv1.PriorityClass); ok {
				return p.admitClass(ctx, req.Operation, pc)
			}
		case auth.Delete:
			if isSystemClass(req.Attributes.Name) {
				return apierrors.NewForbidden(priorityClassesResource, req.Attributes.Name,
					errors.New("this is a system priority class and cannot be deleted"))
			}
		}
	}
	return nil
}

// admitPodCreate sets the pod's priority and preemption policy from its
// class, or rejects the pod.
func (p Priority) admitPodCreate(ctx context.Context, name string, pod *corev1.Pod) error {
	var (
		priority int32
		policy   *corev1.PreemptionPolicy
	)
	if pod.Spec.PriorityClassName == "" {
		dpc, err := p.defaultClass(ctx)
		if err != nil {
			return err
		}
		if dpc != nil {
			pod.Spec.PriorityClassName = dpc.Name
			priority, policy = dpc.Value, dpc.PreemptionPolicy
		} else {
			lower := corev1.PreemptLowerPriority
			priority, policy = 0, &lower
		}
	} else {
		pc, err := p.class(ctx, pod.Spec.PriorityClassName)
		if errors.Is(err, ErrNoPriorityClass) {
			return apierrors.NewForbidden(podsResource, name, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err))
		}
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return apierrors.NewForbidden(podsResource, name, fmt.Errorf(
			"the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name",
			*pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return apierrors.NewForbidden(podsResource, name, fmt.Errorf(
				"the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name",
				*pod.Spec.PreemptionPolicy, *policy))
		}
		pol := *policy
		pod.Spec.PreemptionPolicy = &pol
	}
	return nil
}

// class looks a class up by name. The two system classes resolve to their
// fixed values even when their objects are missing (before bootstrap).
func (p Priority) class(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if p.Classes != nil {
		pc, err := p.Classes.Get(ctx, name)
		if err == nil || !errors.Is(err, ErrNoPriorityClass) {
			return pc, err
		}
	}
	if v, ok := systemPriority[name]; ok {
		lower := corev1.PreemptLowerPriority
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v, PreemptionPolicy: &lower}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoPriorityClass, name)
}

// defaultClass returns the class marked globalDefault, or nil. Should a race
// have marked several, the lowest value wins, as upstream.
func (p Priority) defaultClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	if p.Classes == nil {
		return nil, nil
	}
	list, err := p.Classes.List(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %w", err))
	}
	var dpc *schedulingv1.PriorityClass
	for _, pc := range list {
		if pc.GlobalDefault && (dpc == nil || pc.Value < dpc.Value) {
			dpc = pc
		}
	}
	return dpc, nil
}

// admitClass refuses a second globalDefault class.
func (p Priority) admitClass(ctx context.Context, op auth.Operation, pc *schedulingv1.PriorityClass) error {
	if !pc.GlobalDefault {
		return nil
	}
	dpc, err := p.defaultClass(ctx)
	if err != nil {
		return err
	}
	if dpc != nil && (op == auth.Create || dpc.Name != pc.Name) {
		return apierrors.NewForbidden(priorityClassesResource, pc.Name,
			fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", dpc.Name))
	}
	return nil
}

// carryOverPriority keeps what admission set at create when an update
// leaves it out; any other change is validation's to refuse.
func carryOverPriority(pod, old *corev1.Pod) {
	if pod.Spec.Priority == nil && old.Spec.Priority != nil {
		v := *old.Spec.Priority
		pod.Spec.Priority = &v
	}
	if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
		v := *old.Spec.PreemptionPolicy
		pod.Spec.PreemptionPolicy = &v
	}
}

func isSystemClass(name string) bool {
	_, ok := systemPriority[name]
	return ok
}
