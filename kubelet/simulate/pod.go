// Package simulate runs hollow nodes: each registers a Node, renews its
// Lease and posts its status like a kubelet (through kubelet/node), and
// reports the pods bound to it Running without starting containers, so the
// control plane can be tested at scale on one machine (like kubemark and
// KWOK). Pods that run to completion finish as Finish says (finish.go), so
// Jobs can be measured too. Plan, the pure part, decides what to do with
// one pod.
package simulate

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Action is what a hollow kubelet does with a pod.
type Action int

const (
	// None: the pod is as it should be, or not this node's.
	None Action = iota
	// UpdateStatus: post the returned status.
	UpdateStatus
	// Delete: the pod is terminating and has no containers; delete it for good.
	Delete
)

func (a Action) String() string {
	return [...]string{"None", "UpdateStatus", "Delete"}[a]
}

// Plan decides what the hollow kubelet of node does with pod at now. A pod
// that runs to completion (restartPolicy Never or OnFailure) finishes as
// fin says; until it is due, Plan returns None and how long to wait.
func Plan(pod *corev1.Pod, node *corev1.Node, now time.Time, fin Finish) (Action, *corev1.PodStatus, time.Duration) {
	switch {
	case pod.Spec.NodeName == "" || pod.Spec.NodeName != node.Name:
		return None, nil, 0
	case pod.DeletionTimestamp != nil:
		return Delete, nil, 0
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return None, nil, 0
	case running(pod):
		st, wait := fin.plan(pod, now)
		if st != nil {
			return UpdateStatus, st, 0
		}
		return None, nil, wait
	}
	st := RunningStatus(pod, node, now)
	if _, wait := fin.plan(pod, now); wait > 0 {
		return UpdateStatus, &st, wait
	}
	return UpdateStatus, &st, 0
}

// running reports whether pod's status already says Running and ready with
// every container running.
func running(pod *corev1.Pod) bool {
	st := &pod.Status
	if st.Phase != corev1.PodRunning || st.PodIP == "" || st.StartTime == nil || len(st.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, c := range st.ContainerStatuses {
		if !c.Ready || c.State.Running == nil {
			return false
		}
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RunningStatus is pod's status once its (imaginary) containers run on
// node: addresses and start time already reported are kept.
func RunningStatus(pod *corev1.Pod, node *corev1.Node, now time.Time) corev1.PodStatus {
	ts := metav1.NewTime(now.Truncate(time.Second))
	st := corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: pod.Status.QOSClass, HostIP: pod.Status.HostIP,
		PodIP: pod.Status.PodIP, StartTime: pod.Status.StartTime}
	if st.StartTime == nil {
		st.StartTime = &ts
	}
	if st.HostIP == "" {
		st.HostIP = internalIP(node)
	}
	if st.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if st.PodIP == "" {
		st.PodIP = PodIP(pod, node)
	}
	st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: ts})
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod, c.Name),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: *st.StartTime, FinishedAt: ts, ContainerID: containerID(pod, c.Name)}},
		})
	}
	started := true
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod, c.Name),
			Ready: true, Started: &started, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}},
		})
	}
	return st
}

func internalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// PodIP makes up the pod's address: a host of the node's podCIDR picked by
// the pod's UID, or of 10.244.0.0/16 when the node has no podCIDR yet.
// Two pods may collide; nothing routes to them.
func PodIP(pod *corev1.Pod, node *corev1.Node) string {
	prefix, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		prefix = netip.MustParsePrefix("10.244.0.0/16")
	}
	hosts := uint32(1)<<(32-prefix.Bits()) - 3 // not the network, .1 (the gateway) nor broadcast
	h := fnv.New32a()
	h.Write([]byte(pod.UID))
	h.Write([]byte(pod.Namespace + "/" + pod.Name))
	base := prefix.Masked().Addr().As4()
	ip := binary.BigEndian.Uint32(base[:]) + 2 + h.Sum32()%hosts
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], ip)
	return netip.AddrFrom4(out).String()
}

func containerID(pod *corev1.Pod, name string) string {
	h := fnv.New64a()
	h.Write([]byte(string(pod.UID) + "/" + name))
	return fmt.Sprintf("simulated://%016x", h.Sum64())
}

func imageID(image string) string {
	h := fnv.New64a()
	h.Write([]byte(image))
	return fmt.Sprintf("sha256:%016x", h.Sum64())
}
