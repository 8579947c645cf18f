// Package node is a kubelet's node agent: it registers the Node, renews its
// Lease in kube-node-lease and posts the node's status. The pure parts
// (the registered object, the desired status, the renewed lease) are
// functions of their inputs and the time; Agent does the I/O around them.
// Real and simulated kubelets share it.
package node

import (
	"errors"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReportInterval is how often the status is posted even when unchanged.
const ReportInterval = time.Minute

// Config describes one node.
type Config struct {
	Name       string
	InternalIP string
	// Capacity: cpu, memory, pods and ephemeral-storage. Allocatable is the same.
	Capacity corev1.ResourceList
	// Labels are added to the standard ones.
	Labels map[string]string
	// NodeInfo: the versions the node reports (KubeletVersion,
	// ContainerRuntimeVersion, OSImage, KernelVersion, OperatingSystem,
	// Architecture).
	NodeInfo corev1.NodeSystemInfo
	// KubeletPort is where the kubelet serves logs (0: none), reported in
	// status.daemonEndpoints so the API server can reach it.
	KubeletPort int32
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("node: Name is required")
	case c.InternalIP == "":
		return errors.New("node: InternalIP is required")
	case c.NodeInfo.OperatingSystem == "" || c.NodeInfo.Architecture == "":
		return errors.New("node: NodeInfo.OperatingSystem and Architecture are required")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if _, ok := c.Capacity[r]; !ok {
			return errors.New("node: Capacity needs cpu, memory and pods")
		}
	}
	return nil
}

// Health is what the node observed about itself. The zero value is a
// healthy node.
type Health struct {
	MemoryPressure, DiskPressure, PIDPressure bool
	// NotReady, when set, is the reason the node is not ready.
	NotReady string
	// Images are the images the node holds (nil: not reported, the
	// current list stays).
	Images []corev1.ContainerImage
}

// New returns the Node object to register.
func New(c Config) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   c.Name,
		corev1.LabelOSStable:   c.NodeInfo.OperatingSystem,
		corev1.LabelArchStable: c.NodeInfo.Architecture,
	}
	maps.Copy(labels, c.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: labels},
	}
}

// Status returns the status to post given the current one, and whether it
// must be posted now: something changed, or the last heartbeat is
// ReportInterval old. Fields it does not own (images, daemon endpoints)
// are kept.
func Status(c Config, h Health, cur corev1.NodeStatus, now time.Time) (corev1.NodeStatus, bool) {
	st := *cur.DeepCopy()
	st.Capacity = c.Capacity.DeepCopy()
	st.Allocatable = c.Capacity.DeepCopy()
	st.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: c.InternalIP},
		{Type: corev1.NodeHostName, Address: c.Name},
	}
	info := c.NodeInfo
	info.MachineID, info.SystemUUID, info.BootID = cur.NodeInfo.MachineID, cur.NodeInfo.SystemUUID, cur.NodeInfo.BootID
	st.NodeInfo = info
	st.Phase = ""
	if c.KubeletPort > 0 {
		st.DaemonEndpoints.KubeletEndpoint.Port = c.KubeletPort
	}
	if h.Images != nil {
		st.Images = h.Images
	}
	changed := st.DaemonEndpoints != cur.DaemonEndpoints || !equality.Semantic.DeepEqual(st.Images, cur.Images) || !equality.Semantic.DeepEqual(st.Capacity, cur.Capacity) || !equality.Semantic.DeepEqual(st.Allocatable, cur.Allocatable) ||
		!equality.Semantic.DeepEqual(st.Addresses, cur.Addresses) || st.NodeInfo != cur.NodeInfo

	ts := metav1.NewTime(now.Truncate(time.Second))
	want := desiredConditions(h)
	old := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, cd := range cur.Conditions {
		old[cd.Type] = cd
	}
	st.Conditions = st.Conditions[:0]
	for _, w := range want {
		w.LastHeartbeatTime, w.LastTransitionTime = ts, ts
		if o, ok := old[w.Type]; ok {
			if o.Status == w.Status {
				w.LastTransitionTime = o.LastTransitionTime
			}
			if o.Status != w.Status || o.Reason != w.Reason || o.Message != w.Message || now.Sub(o.LastHeartbeatTime.Time) >= ReportInterval {
				changed = true
			}
			delete(old, w.Type)
		} else {
			changed = true
		}
		st.Conditions = append(st.Conditions, w)
	}
	for _, cd := range cur.Conditions { // conditions others own (e.g. NetworkUnavailable)
		if _, ok := old[cd.Type]; ok {
			st.Conditions = append(st.Conditions, cd)
		}
	}
	if !changed {
		return cur, false
	}
	return st, true
}

func desiredConditions(h Health) []corev1.NodeCondition {
	pressure := func(t corev1.NodeConditionType, on bool, okReason, okMsg, badReason, badMsg string) corev1.NodeCondition {
		if on {
			return corev1.NodeCondition{Type: t, Status: corev1.ConditionTrue, Reason: badReason, Message: badMsg}
		}
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReason, Message: okMsg}
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if h.NotReady != "" {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: h.NotReady}
	}
	return []corev1.NodeCondition{
		pressure(corev1.NodeMemoryPressure, h.MemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
		pressure(corev1.NodeDiskPressure, h.DiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", "KubeletHasDiskPressure", "kubelet has disk pressure"),
		pressure(corev1.NodePIDPressure, h.PIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available", "KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
		ready,
	}
}

// Capacity builds a capacity list.
func Capacity(cpu, memory, ephemeral string, pods int64) (corev1.ResourceList, error) {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory, corev1.ResourceEphemeralStorage: ephemeral} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, errors.New("node: bad " + string(name) + " quantity " + v)
		}
		out[name] = q
	}
	return out, nil
}
