package server

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// wantTail is the reference: the last n lines of s, a final line without
// a newline counting as a line.
func wantTail(s string, n int) string {
	if n == 0 || s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n > len(lines) {
		n = len(lines)
	}
	return strings.Join(lines[len(lines)-n:], "")
}

func TestTailStart(t *testing.T) {
	t.Parallel()
	long := func(lines, width int) string {
		var b strings.Builder
		for i := range lines {
			fmt.Fprintf(&b, "%0*d\n", width, i)
		}
		return b.String()
	}
	cases := []struct {
		name string
		data string
		n    []int64
	}{
		{"empty", "", []int64{0, 1, 5}},
		{"terminated", "a\nb\nc\n", []int64{0, 1, 2, 3, 4}},
		{"unterminated", "a\nb\nc", []int64{0, 1, 2, 3, 4}},
		{"one line", "only\n", []int64{0, 1, 2}},
		{"one partial", "only", []int64{0, 1, 2}},
		{"blank lines", "\n\n\n", []int64{1, 2, 3, 4}},
		{"crossing blocks", long(3000, 9), []int64{1, 800, 819, 820, 821, 1700, 2999, 3000, 3001}},
		{"one line longer than a block", "x\n" + strings.Repeat("y", 3*tailBlock) + "\n", []int64{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := bytes.NewReader([]byte(tc.data))
			for _, n := range tc.n {
				off, err := tailStart(r, int64(len(tc.data)), n)
				if err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				if got, want := tc.data[off:], wantTail(tc.data, int(n)); got != want {
					t.Errorf("n=%d: tail starts at %d giving %d bytes, want %d bytes", n, off, len(got), len(want))
				}
			}
		})
	}
}
