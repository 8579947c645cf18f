package app

import (
	"math"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name            string
		flag            string
		machine, cgroup int64
		want            int64
		wantErr         bool
	}{
		{"default on a big machine: 1 GiB", "0", 24 * gib, 0, gib, false},
		{"empty is the default", "", 24 * gib, 0, gib, false},
		{"default on a small machine: half of it", "0", gib, 0, gib / 2, false},
		{"default in a limited cgroup: 90% of it", "0", 24 * gib, 2 * gib, 2 * gib / 10 * 9, false},
		{"machine unknown", "0", 0, 0, gib, false},
		{"explicit quantity", "768Mi", 24 * gib, 2 * gib, 768 << 20, false},
		{"decimal quantity", "2G", 24 * gib, 0, 2_000_000_000, false},
		{"none", "none", 24 * gib, 0, math.MaxInt64, false},
		{"garbage", "lots", 24 * gib, 0, 0, true},
		{"negative", "-1Gi", 24 * gib, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := memoryLimit(tc.flag, tc.machine, tc.cgroup)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Fatalf("limit %d, want %d", got, tc.want)
			}
		})
	}
}
