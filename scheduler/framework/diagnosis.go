package framework

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrNoNodesAvailable is returned when the snapshot has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Diagnosis records why a pod fits nowhere.
type Diagnosis struct {
	// NodeToStatus holds the status of every node a filter rejected.
	NodeToStatus map[string]*Status
	// AbsentNodesStatus applies to the nodes missing from NodeToStatus:
	// those a PreFilter excluded (by rejecting the pod, or by narrowing the
	// candidate nodes). Nil when there are none.
	AbsentNodesStatus *Status
	// UnschedulablePlugins names the plugins that rejected the pod; the
	// queue uses them to decide which cluster events may make it
	// schedulable.
	UnschedulablePlugins sets.Set[string]
	// PreFilterMsg is the message of the PreFilter that rejected the pod.
	PreFilterMsg string
	// PostFilterMsg is the preemption outcome ("preemption: ...").
	PostFilterMsg string
}

// NodeStatus returns the status recorded for a node: its own, or the
// absent-nodes status.
func (d *Diagnosis) NodeStatus(name string) *Status {
	if s, ok := d.NodeToStatus[name]; ok {
		return s
	}
	return d.AbsentNodesStatus
}

// AddPluginStatus notes the plugin of a rejecting status.
func (d *Diagnosis) AddPluginStatus(s *Status) {
	if s.Plugin() == "" || !s.IsRejected() {
		return
	}
	if d.UnschedulablePlugins == nil {
		d.UnschedulablePlugins = sets.New[string]()
	}
	d.UnschedulablePlugins.Insert(s.Plugin())
}

// FitError is the error of a cycle that found no node for the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// NoNodeAvailableMsg starts every FitError message.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Error renders the upstream FailedScheduling message: "0/N nodes are
// available:", then either the PreFilter's message or the histogram of the
// filters' reasons ("<count> <reason>", sorted as strings, joined by ", "),
// each followed by ".", then the preemption message if any.
func (f *FitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, NoNodeAvailableMsg+":", f.NumAllNodes)
	d := &f.Diagnosis
	if d.PreFilterMsg != "" {
		fmt.Fprintf(&b, " %v.", d.PreFilterMsg)
	} else {
		reasons := make(map[string]int)
		for _, s := range d.NodeToStatus {
			for _, r := range s.Reasons() {
				reasons[r]++
			}
		}
		if absent := f.NumAllNodes - len(d.NodeToStatus); absent > 0 && d.AbsentNodesStatus != nil {
			for _, r := range d.AbsentNodesStatus.Reasons() {
				reasons[r] += absent
			}
		}
		histogram := make([]string, 0, len(reasons))
		for r, n := range reasons {
			histogram = append(histogram, fmt.Sprintf("%v %v", n, r))
		}
		sort.Strings(histogram)
		if len(histogram) > 0 {
			fmt.Fprintf(&b, " %v.", strings.Join(histogram, ", "))
		}
	}
	if d.PostFilterMsg != "" {
		fmt.Fprintf(&b, " %v", d.PostFilterMsg)
	}
	return b.String()
}
