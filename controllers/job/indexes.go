package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// noIndex is the completion index of a pod that has none (or a bad one).
const noIndex = -1

// indexSet is a set of completion indexes, written in a Job's status as
// ordered intervals ("1,3-5,7").
type indexSet map[int]bool

// parseIndexes reads a status.completedIndexes (or failedIndexes) string,
// keeping the indexes below completions; a malformed part is skipped.
func parseIndexes(s string, completions int) indexSet {
	out := indexSet{}
	if s == "" {
		return out
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
		}
		for i := first; i <= last && i < completions; i++ {
			out[i] = true
		}
	}
	return out
}

// String formats the set as ordered intervals.
func (s indexSet) String() string {
	idx := make([]int, 0, len(s))
	for i := range s {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var b strings.Builder
	for k := 0; k < len(idx); {
		j := k
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[k]))
		if j > k {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		k = j + 1
	}
	return b.String()
}

// completionIndex reads a pod's completion index from its annotation (or,
// failing that, its label), noIndex when absent or malformed.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return noIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return noIndex
	}
	return i
}

// validIndex returns p's completion index when it is one of the Job's
// (below completions), or noIndex.
func validIndex(p *corev1.Pod, completions int32) int {
	if i := completionIndex(p); i != noIndex && i < int(completions) {
		return i
	}
	return noIndex
}

// firstPendingIndexes returns up to n indexes below completions that have
// neither succeeded, nor failed for good, nor a pod working on them
// (active or, when busy says so, terminating), lowest first.
func firstPendingIndexes(n int, completions int32, done indexSet, busy map[int]bool) []int {
	var out []int
	for i := 0; i < int(completions) && len(out) < n; i++ {
		if !done[i] && !busy[i] {
			out = append(out, i)
		}
	}
	return out
}
