package queue

import "github.com/kubebus/kubebus/scheduler/framework"

// activeHeap orders by priority (highest first), then age (oldest first).
type activeHeap []*entry

func (h activeHeap) Len() int { return len(h) }
func (h activeHeap) Less(i, j int) bool {
	pi, pj := framework.PodPriority(h[i].pod), framework.PodPriority(h[j].pod)
	if pi != pj {
		return pi > pj
	}
	if !h[i].added.Equal(h[j].added) {
		return h[i].added.Before(h[j].added)
	}
	return h[i].key < h[j].key
}
func (h activeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *activeHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *activeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// backoffHeap orders by the time the backoff expires.
type backoffHeap struct {
	cfg     Config
	entries []*entry
}

func (h *backoffHeap) Len() int { return len(h.entries) }
func (h *backoffHeap) Less(i, j int) bool {
	return h.entries[i].readyAt(h.cfg).Before(h.entries[j].readyAt(h.cfg))
}
func (h *backoffHeap) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.entries[i].index, h.entries[j].index = i, j
}
func (h *backoffHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(h.entries)
	h.entries = append(h.entries, e)
}
func (h *backoffHeap) Pop() any {
	old := h.entries
	e := old[len(old)-1]
	old[len(old)-1] = nil
	h.entries = old[:len(old)-1]
	return e
}
