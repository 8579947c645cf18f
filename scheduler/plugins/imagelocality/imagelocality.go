// Package imagelocality favours nodes that already hold the pod's
// container images, weighted by image size and by how widely the image is
// spread over the cluster (so one node holding an image does not attract
// every pod). The scheduler configuration can disable it.
package imagelocality

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "ImageLocality"

const (
	mb int64 = 1024 * 1024
	// minThreshold: below this much image present, a node scores 0.
	minThreshold = 23 * mb
	// maxContainerThreshold: per container, at this much present a node
	// scores 100.
	maxContainerThreshold = 1000 * mb

	preScoreKey framework.StateKey = "PreScore" + Name
)

// ImageLocality is the plugin.
type ImageLocality struct{}

var (
	_ framework.PreScorePlugin = (*ImageLocality)(nil)
	_ framework.ScorePlugin    = (*ImageLocality)(nil)
)

// New returns the plugin.
func New() *ImageLocality { return &ImageLocality{} }

// Name returns Name.
func (*ImageLocality) Name() string { return Name }

type image struct {
	name   string  // normalized
	spread float64 // share of all nodes holding it
}

type preScoreState struct {
	images     []image // one per container (init and regular)
	containers int
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore normalizes the pod's image names and looks up how many nodes
// hold each.
func (*ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot, _ []*framework.NodeInfo) *framework.Status {
	total := snap.NumNodes()
	s := &preScoreState{containers: len(pod.Spec.InitContainers) + len(pod.Spec.Containers)}
	present := false
	add := func(cs []v1.Container) {
		for i := range cs {
			name := framework.NormalizeImageName(cs[i].Image)
			var spread float64
			if total > 0 {
				n := snap.ImageNumNodes(name)
				present = present || n > 0
				spread = float64(n) / float64(total)
			}
			s.images = append(s.images, image{name: name, spread: spread})
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if !present {
		// No node holds any of the images: every node would score 0,
		// which changes no ranking. Skip scoring.
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score sums, over the pod's containers whose image the node holds,
// size × spread, and maps the sum from [23MiB, 1000MiB × containers]
// onto [0, 100].
func (*ImageLocality) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var sum int64
	for _, img := range s.images {
		if size, ok := ni.ImageSizes[img.name]; ok {
			sum += int64(float64(size) * img.spread)
		}
	}
	maxThreshold := maxContainerThreshold * int64(s.containers)
	sum = min(max(sum, minThreshold), maxThreshold)
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold), nil
}
