package tap

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Since
		wantErr bool
	}{
		{in: "", want: Since{}},
		{in: "1", want: Since{Revision: 1}},
		{in: " 1234 ", want: Since{Revision: 1234}},
		{in: "10m", want: Since{Age: 10 * time.Minute}},
		{in: "1h30m", want: Since{Age: 90 * time.Minute}},
		{in: "0", wantErr: true},
		{in: "-5", wantErr: true},
		{in: "0s", wantErr: true},
		{in: "-1m", wantErr: true},
		{in: "yesterday", wantErr: true},
		{in: "10 m", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSince(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSince(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseSince(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// fakeStream is a stream as a sorted list of stored {seq, revision}; the
// sequences missing from it were deleted or aged out.
type fakeStream struct {
	seqs   []uint64
	revs   []int64
	probes int
}

func (f *fakeStream) probe(_ context.Context, seq uint64) (uint64, int64, error) {
	f.probes++
	i := sort.Search(len(f.seqs), func(i int) bool { return f.seqs[i] >= seq })
	if i == len(f.seqs) {
		return 0, 0, nil
	}
	return f.seqs[i], f.revs[i], nil
}

// dense builds n messages at sequences from.. with revisions rev(i).
func dense(from uint64, n int, rev func(i int) int64) *fakeStream {
	f := &fakeStream{}
	for i := 0; i < n; i++ {
		f.seqs = append(f.seqs, from+uint64(i))
		f.revs = append(f.revs, rev(i))
	}
	return f
}

func TestFindStart(t *testing.T) {
	t.Parallel()
	// Revisions 10, 12, 14, ... at sequences 1..100.
	even := func() *fakeStream { return dense(1, 100, func(i int) int64 { return int64(10 + 2*i) }) }
	// Sequences 1..10 with 4..7 deleted; revisions = 100*seq.
	holes := func() *fakeStream {
		return &fakeStream{seqs: []uint64{1, 2, 3, 8, 9, 10}, revs: []int64{100, 200, 300, 800, 900, 1000}}
	}
	tests := []struct {
		name        string
		stream      func() *fakeStream
		first, last uint64
		target      int64
		want        uint64
	}{
		{name: "before everything", stream: even, first: 1, last: 100, target: 1, want: 1},
		{name: "exact first", stream: even, first: 1, last: 100, target: 10, want: 1},
		{name: "exact middle", stream: even, first: 1, last: 100, target: 50, want: 21},
		{name: "between revisions", stream: even, first: 1, last: 100, target: 51, want: 22},
		{name: "exact last", stream: even, first: 1, last: 100, target: 208, want: 100},
		{name: "after everything", stream: even, first: 1, last: 100, target: 209, want: 101},
		{name: "empty stream", stream: func() *fakeStream { return &fakeStream{} }, first: 0, last: 0, target: 5, want: 1},
		{name: "purged stream", stream: func() *fakeStream { return &fakeStream{} }, first: 51, last: 50, target: 5, want: 51},
		{name: "aged-out head", stream: func() *fakeStream { return dense(40, 11, func(i int) int64 { return int64(400 + i) }) }, first: 40, last: 50, target: 1, want: 40},
		{name: "target in a hole", stream: holes, first: 1, last: 10, target: 500, want: 4},
		{name: "target after a hole", stream: holes, first: 1, last: 10, target: 800, want: 4},
		{name: "target before a hole", stream: holes, first: 1, last: 10, target: 300, want: 3},
		{name: "target after the last", stream: holes, first: 1, last: 10, target: 1001, want: 11},
		{name: "newer messages beyond last ignored", stream: even, first: 1, last: 50, target: 150, want: 51},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.stream()
			got, err := FindStart(context.Background(), tt.first, tt.last, tt.target, f.probe)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("FindStart = %d, want %d", got, tt.want)
			}
			// Starting at got must deliver the first qualifying message.
			if s, rev, _ := f.probe(context.Background(), got); s != 0 && s <= tt.last && rev < tt.target {
				t.Fatalf("starting at %d delivers revision %d < %d", got, rev, tt.target)
			}
			if f.probes > 10 {
				t.Fatalf("%d probes for %d messages; want a binary search", f.probes, len(f.seqs))
			}
		})
	}
}

func TestFindStartProbeError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := FindStart(context.Background(), 1, 10, 5, func(context.Context, uint64) (uint64, int64, error) { return 0, 0, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FindStart(ctx, 1, 10, 5, dense(1, 10, func(i int) int64 { return int64(i) }).probe); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
