package servicealloc

// gapResult is what a gap search over one page of claims found.
type gapResult struct {
	free  uint64 // a free offset, when found
	found bool
	// more says the page ended before the answer: read claims from next on.
	more bool
	next uint64
}

// gap finds the first offset in [from, to] that is neither claimed nor
// skipped. taken holds claimed offsets in ascending order, as one page of a
// range read starting at from (offsets outside [from, to] may appear);
// complete says no claim follows the last one in taken. When every offset
// up to the last of an incomplete page is claimed, the answer is not known
// yet: gap asks for more from the first offset after the page.
// Neither found nor more means [from, to] is full. Ranges are far below
// 2^64, so to+1 does not overflow.
func gap(from, to uint64, taken []uint64, complete bool, skip func(uint64) bool) gapResult {
	i := 0
	for c := from; c <= to; c++ {
		for i < len(taken) && taken[i] < c {
			i++
		}
		if i == len(taken) && !complete {
			return gapResult{more: true, next: c}
		}
		if i < len(taken) && taken[i] == c || skip != nil && skip(c) {
			continue
		}
		return gapResult{free: c, found: true}
	}
	return gapResult{}
}

// segments splits [lo, hi] at start into the two spans a wrapping scan
// visits: [start, hi] then [lo, start-1] (empty when start is lo).
func segments(lo, hi, start uint64) [][2]uint64 {
	out := [][2]uint64{{start, hi}}
	if start > lo {
		out = append(out, [2]uint64{lo, start - 1})
	}
	return out
}
