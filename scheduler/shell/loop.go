package shell

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/internal/crash"
	"github.com/kubebus/kubebus/scheduler/cycle"
	"github.com/kubebus/kubebus/scheduler/framework"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// maxBindsInFlight bounds the bindings the scheduler waits on at once.
// The API server serves them beside every other client's writes; an
// unbounded number in flight only queues there (and delays the others)
// without binding any faster. Once that many are out, the loop waits for
// one to finish before it schedules the next pod.
const maxBindsInFlight = 32

// Run schedules pods until ctx ends (the Manager runs it while leading).
func (s *Scheduler) Run(ctx context.Context) {
	s.log.Debug("scheduling")
	defer s.binds.Wait()
	if s.bindSlots == nil {
		s.bindSlots = make(chan struct{}, maxBindsInFlight)
	}
	for {
		select {
		case s.bindSlots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		qp, err := s.queue.Pop(ctx)
		if err != nil {
			<-s.bindSlots
			return
		}
		if !s.scheduleOneSafely(ctx, qp) {
			<-s.bindSlots
		}
	}
}

// scheduleOneSafely is scheduleOne with a panic (a plugin's, say)
// recovered: logged with its stack, counted in
// kubebus_panics_total{component="scheduler",where="schedule"}, and the
// pod backs off to be tried again while the loop goes on with the next.
func (s *Scheduler) scheduleOneSafely(ctx context.Context, qp queue.Queued) (binding bool) {
	err := crash.Do(s.log, "scheduler", "schedule", qp.Pod.Namespace+"/"+qp.Pod.Name, func() error {
		binding = s.scheduleOne(ctx, qp)
		return nil
	})
	if err != nil {
		s.recorder.Event(qp.Pod, corev1.EventTypeWarning, "FailedScheduling", err.Error())
		s.queue.Backoff(qp)
		return false
	}
	return binding
}

// withSnap runs f holding s.mu; a panic in f releases it.
func (s *Scheduler) withSnap(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// scheduleOne runs one cycle for a popped pod and starts its binding,
// which then holds one of s.bindSlots; it reports whether it did.
func (s *Scheduler) scheduleOne(ctx context.Context, qp queue.Queued) (binding bool) {
	pod, ok := s.getPod(qp.Pod.Namespace, qp.Pod.Name)
	if !ok || pod.UID != qp.Pod.UID || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || !s.responsible(pod) {
		s.queue.Forget(qp.Pod)
		return false
	}
	prof := s.profiles[pod.Spec.SchedulerName]

	var (
		res        cycle.Result
		err        error
		assumed    *corev1.Pod
		wasAssumed bool
	)
	s.withSnap(func() {
		if _, wasAssumed = s.snap.NodeNameOf(pod); wasAssumed {
			return
		}
		res, err = cycle.Schedule(ctx, prof, s.snap, pod, cycle.Options{StartIndex: s.next, Parallelism: s.parallelism})
		s.next = res.NextStartIndex
		if err == nil {
			assumed = pod.DeepCopy()
			assumed.Spec.NodeName = res.Node
			s.snap.AddPod(assumed)
			if st := prof.RunReserve(ctx, res.State, pod, res.Node, s.snap); !st.IsSuccess() {
				s.snap.RemovePod(assumed)
				err = st.Err()
			}
		}
	})
	if wasAssumed {
		s.queue.Forget(pod)
		return false
	}

	var fit *framework.FitError
	switch {
	case err == nil:
		s.binds.Add(1)
		go func() {
			defer s.binds.Done()
			holding := true
			defer func() {
				if holding {
					<-s.bindSlots
				}
			}()
			if prof.WillPreBind(ctx, res.State, pod, res.Node) {
				// Waiting for volumes may take long: the slot, which
				// bounds the bindings in flight, is free meanwhile.
				<-s.bindSlots
				holding = false
				if !s.preBind(ctx, qp, pod, assumed, prof, res.State) {
					return
				}
				select {
				case s.bindSlots <- struct{}{}:
					holding = true
				case <-ctx.Done():
					s.unreserve(ctx, qp, pod, assumed, prof, res.State)
					return
				}
			}
			s.bindSafely(ctx, qp, pod, assumed)
		}()
		return true
	case errors.As(err, &fit):
		s.log.Debug("unschedulable", "pod", framework.PodKey(pod), "reason", err)
		s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", err.Error())
		nominated := pod.Status.NominatedNodeName
		if res.Preemption != nil {
			nominated = s.preempt(ctx, pod, res)
		}
		s.setUnschedulable(ctx, pod, err.Error(), nominated)
		s.queue.Unschedulable(qp)
	default:
		s.log.Info("scheduling failed", "pod", framework.PodKey(pod), "err", err)
		s.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", err.Error())
		s.queue.Backoff(qp)
	}
	return false
}

// bindSafely is bind with a panic recovered (logged, counted in
// kubebus_panics_total{component="scheduler",where="bind"}): the
// assumption is forgotten and the pod backs off.
func (s *Scheduler) bindSafely(ctx context.Context, qp queue.Queued, pod, assumed *corev1.Pod) {
	err := crash.Do(s.log, "scheduler", "bind", pod.Namespace+"/"+pod.Name, func() error {
		s.bind(ctx, qp, pod, assumed)
		return nil
	})
	if err != nil {
		s.withSnap(func() { s.snap.RemovePod(assumed) })
		s.queue.MoveAll()
		s.queue.Backoff(qp)
	}
}

// preBind runs the profile's PreBind plugins (VolumeBinding waits there
// for the pod's claims to be provisioned and bound) in the binding
// goroutine, so the scheduling loop goes on meanwhile. It reports whether
// the pod may be bound; on failure it unreserves, forgets the assumption,
// records a FailedScheduling event and the pod backs off. A panic counts
// as a failure.
func (s *Scheduler) preBind(ctx context.Context, qp queue.Queued, pod, assumed *corev1.Pod, prof *framework.Profile, state *framework.CycleState) (ok bool) {
	if len(prof.PreBind) == 0 {
		return true
	}
	node := assumed.Spec.NodeName
	var st *framework.Status
	if err := crash.Do(s.log, "scheduler", "preBind", pod.Namespace+"/"+pod.Name, func() error {
		st = prof.RunPreBind(ctx, state, pod, node, bindHandle{s})
		return nil
	}); err != nil {
		st = framework.AsStatus(err)
	}
	if st.IsSuccess() {
		return true
	}
	if ctx.Err() == nil {
		s.log.Info("pre-binding failed", "pod", framework.PodKey(pod), "node", node, "err", st.Err())
		s.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "%v", st.Err())
	}
	s.unreserve(ctx, qp, pod, assumed, prof, state)
	return false
}

// unreserve undoes a reservation whose binding will not happen: the
// Reserve plugins' assumptions and the assumed pod go, and the pod backs
// off.
func (s *Scheduler) unreserve(ctx context.Context, qp queue.Queued, pod, assumed *corev1.Pod, prof *framework.Profile, state *framework.CycleState) {
	s.withSnap(func() {
		prof.RunUnreserve(ctx, state, pod, assumed.Spec.NodeName, s.snap)
		s.snap.RemovePod(assumed)
	})
	s.queue.MoveAll()
	s.queue.Backoff(qp)
}

// bindHandle is what PreBind plugins see of the scheduler.
type bindHandle struct{ s *Scheduler }

func (h bindHandle) Client() kubernetes.Interface { return h.s.client }

func (h bindHandle) Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	if h.s.claims == nil {
		return nil, false
	}
	return h.s.claims.Get(namespace, name)
}

func (h bindHandle) Pod(namespace, name string) (*corev1.Pod, bool) {
	return h.s.getPod(namespace, name)
}

// bind writes the Binding; on failure it forgets the assumption and
// retries after a backoff.
func (s *Scheduler) bind(ctx context.Context, qp queue.Queued, pod, assumed *corev1.Pod) {
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: assumed.Spec.NodeName},
	}, metav1.CreateOptions{})
	if err != nil {
		s.withSnap(func() { s.snap.RemovePod(assumed) })
		s.queue.MoveAll() // the room it held is free again
		if apierrors.IsNotFound(err) {
			s.queue.Forget(pod)
			return
		}
		if ctx.Err() != nil {
			// Leadership lost (or shutting down): the pod stays queued
			// for the next term. Had the binding gone through after all,
			// the informer removes the pod from the queue.
			s.queue.Backoff(qp)
			return
		}
		s.log.Info("binding failed", "pod", framework.PodKey(pod), "node", assumed.Spec.NodeName, "err", err)
		s.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "Binding rejected: %v", err)
		s.queue.Backoff(qp)
		return
	}
	s.queue.Forget(pod)
	s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, assumed.Spec.NodeName)
}

// setUnschedulable records PodScheduled=False/Unschedulable and the
// nominated node unless the pod already says so.
func (s *Scheduler) setUnschedulable(ctx context.Context, pod *corev1.Pod, msg, nominated string) {
	if pod.Status.NominatedNodeName == nominated {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == msg {
				return
			}
		}
	}
	p := pod.DeepCopy()
	p.Status.NominatedNodeName = nominated
	setCondition(p, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: msg, LastTransitionTime: metav1.Now(),
	})
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		s.log.Info("recording the PodScheduled condition", "pod", framework.PodKey(pod), "err", err)
	}
}

func setCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			if p.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = p.Status.Conditions[i].LastTransitionTime
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

// preempt carries out a preemption plan: mark and gracefully delete the
// victims, nominate the pod in the snapshot, and clear the nominations
// that no longer hold. It returns the nominated node for the pod's status.
func (s *Scheduler) preempt(ctx context.Context, pod *corev1.Pod, res cycle.Result) string {
	plan := res.Preemption
	for _, v := range plan.Victims {
		vc := v.DeepCopy()
		setCondition(vc, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler",
			Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", EventComponent), LastTransitionTime: metav1.Now(),
		})
		if _, err := s.client.CoreV1().Pods(vc.Namespace).UpdateStatus(ctx, vc, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.log.Debug("marking a victim", "pod", framework.PodKey(v), "err", err)
		}
		if err := s.client.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &v.UID}}); err != nil && !apierrors.IsNotFound(err) {
			s.log.Info("preempting", "victim", framework.PodKey(v), "err", err)
			continue
		}
		s.recorder.Eventf(v, corev1.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", pod.UID, plan.NominatedNode)
	}
	for _, p := range plan.ClearNominated {
		s.nominate(ctx, p, "")
	}
	s.withSnap(func() { s.snap.AddNominatedPod(pod, plan.NominatedNode) })
	return plan.NominatedNode
}

func (s *Scheduler) nominate(ctx context.Context, pod *corev1.Pod, node string) {
	latest, ok := s.getPod(pod.Namespace, pod.Name)
	if !ok || latest.Status.NominatedNodeName == node {
		return
	}
	p := latest.DeepCopy()
	p.Status.NominatedNodeName = node
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.log.Info("setting nominatedNodeName", "pod", framework.PodKey(pod), "node", node, "err", err)
	}
}
