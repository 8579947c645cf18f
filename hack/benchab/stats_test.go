package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseBenchLine(t *testing.T) {
	m, ok := parseBenchLine("BenchmarkNodeLoadCreates-2   	       1	3401527371 ns/op	         0.7300 client-cpu-s	       588.0 creates/s	0.5 nodes-cpu-s	4 server-cpu-s")
	if !ok || m["creates/s"] != 588 || m["client-cpu-s"] != 0.73 || m["ns/op"] != 3401527371 || m["total-cpu-s"] != 5.23 {
		t.Fatalf("got %v, %v", m, ok)
	}
	if m, _ := parseBenchLine("BenchmarkX-2 1 5 ns/op 4 server-cpu-s"); m["total-cpu-s"] != 0 {
		t.Errorf("a total of one process: %v", m)
	}
	for _, line := range []string{"", "BenchmarkNodeLoadCreates", "PASS", "ok  	x	1.2s", "BenchmarkX-2 1 abc ns/op", "--- FAIL: BenchmarkX"} {
		if m, ok := parseBenchLine(line); ok {
			t.Errorf("%q parsed as %v", line, m)
		}
	}
}

func TestMedianMean(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 = %v", got)
	}
	if got := mean([]float64{1, 2, 6}); got != 3 {
		t.Errorf("mean = %v", got)
	}
	if median(nil) != 0 || mean(nil) != 0 {
		t.Error("empty sets are not 0")
	}
}

func results(config string, vals ...float64) []result {
	var rs []result
	for i, v := range vals {
		rs = append(rs, result{round: i, config: config, metrics: map[string]float64{"creates/s": v}})
	}
	return rs
}

// Ratios pair the rounds, skipping a round one configuration lacks.
func TestPairedRatios(t *testing.T) {
	rs := append(results("on", 90, 100, 80), results("off", 100, 100)...)
	got := pairedRatios(rs, "on", "off", "creates/s")
	if len(got) != 2 || got[0] != 0.9 || got[1] != 1 {
		t.Fatalf("ratios %v", got)
	}
}

// The bootstrap interval holds the ratio of the medians, and is one
// point when the runs do not vary.
func TestBootstrapRatio(t *testing.T) {
	a := []float64{80, 95, 90, 85, 100, 70, 92}
	b := []float64{100, 110, 90, 105, 95, 120, 98}
	lo, hi := bootstrapRatio(a, b, 2000)
	r := median(a) / median(b)
	if !(lo <= r && r <= hi) || lo >= hi {
		t.Fatalf("interval %.3f..%.3f, ratio %.3f", lo, hi, r)
	}
	lo, hi = bootstrapRatio([]float64{9, 9}, []float64{10, 10}, 100)
	if math.Abs(lo-0.9) > 1e-12 || math.Abs(hi-0.9) > 1e-12 {
		t.Fatalf("constant runs gave %.3f..%.3f", lo, hi)
	}
}

func TestSummary(t *testing.T) {
	rs := append(results("off", 100, 100, 100), results("on", 90, 95, 100)...)
	s := summary(rs, []string{"off", "on"}, "creates/s")
	for _, want := range []string{"off:", "on:", "creates/s      median         95", "on / off, creates/s: ratio of medians 0.950", "per-round ratios: median 0.950, mean 0.950 (n=3)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig("notoken||KUBEBUS_BENCH_NO_TOKEN=1", "/bin/kubebus")
	if err != nil || c.label != "notoken" || c.args != "" || len(c.env) != 1 || c.bin != "/bin/kubebus" {
		t.Fatalf("%+v, %v", c, err)
	}
	c, err = parseConfig("off|--authorization-mode=AlwaysAllow||/tmp/other", "/bin/kubebus")
	if err != nil || c.args != "--authorization-mode=AlwaysAllow" || c.bin != "/tmp/other" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range []string{"", "two words", "x||NOVALUE"} {
		if _, err := parseConfig(bad, "/bin/kubebus"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseConfig("x", ""); err == nil {
		t.Error("a configuration without a binary accepted")
	}
}

func TestParseRecord(t *testing.T) {
	r, label, ok, err := parseRecord("3 on BenchmarkNodeLoadCreates-2 1 3401527371 ns/op 588.0 creates/s")
	if err != nil || !ok || label != "on" || r.round != 3 || r.metrics["creates/s"] != 588 {
		t.Fatalf("%+v %q %v %v", r, label, ok, err)
	}
	if _, _, ok, err := parseRecord("   "); ok || err != nil {
		t.Fatalf("blank line: %v %v", ok, err)
	}
	for _, bad := range []string{"x on BenchmarkX-2 1 5 ns/op", "3 on PASS", "3"} {
		if _, _, _, err := parseRecord(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Every round runs every configuration once, in orders that differ
// between rounds, the same for a round each time.
func TestRoundOrder(t *testing.T) {
	orders := map[string]bool{}
	for r := 0; r < 20; r++ {
		o := roundOrder(0, r, 4)
		seen := map[int]bool{}
		for _, i := range o {
			if i < 0 || i >= 4 || seen[i] {
				t.Fatalf("round %d: %v is not a permutation of 4", r, o)
			}
			seen[i] = true
		}
		if len(o) != 4 || !slices.Equal(o, roundOrder(0, r, 4)) {
			t.Fatalf("round %d: %v, then %v", r, o, roundOrder(0, r, 4))
		}
		orders[fmt.Sprint(o)] = true
	}
	if len(orders) < 5 {
		t.Fatalf("20 rounds used only %d orders", len(orders))
	}
	// Another seed draws other orders for the same rounds.
	same := 0
	for r := 0; r < 20; r++ {
		if slices.Equal(roundOrder(0, r, 4), roundOrder(1, r, 4)) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("seeds 0 and 1 gave the same order in %d of 20 rounds", same)
	}
}

// A resample whose base median is 0 is left out, not counted as 0.
func TestBootstrapZeroBase(t *testing.T) {
	lo, hi := bootstrapRatio([]float64{5, 5, 5}, []float64{0, 10, 10}, 500)
	if lo != 0.5 || hi != 0.5 {
		t.Fatalf("interval %v..%v, want 0.5..0.5", lo, hi)
	}
	if lo, hi := bootstrapRatio([]float64{1, 2}, []float64{1}, 500); lo != 0 || hi != 0 {
		t.Fatalf("unpaired sets gave %v..%v", lo, hi)
	}
}

func TestWithBaseAndUnit(t *testing.T) {
	got, err := withBase([]string{"a", "b", "c"}, "c")
	if err != nil || !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := withBase([]string{"a"}, "z"); err == nil {
		t.Fatal("an unknown base accepted")
	}
	rs := results("on", 1)
	if !hasUnit(rs, "creates/s") || hasUnit(rs, "creates") {
		t.Fatal("hasUnit")
	}
	if m, ok := parseBenchLine("BenchmarkX-2 1 5 ns/op 7"); ok {
		t.Fatalf("a value without a unit parsed as %v", m)
	}
}

// A file holding a round of a configuration twice (two sets appended)
// is refused.
func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	line := func(r int, c string, v float64) string {
		return fmt.Sprintf("%d %s BenchmarkX-2 1 5 ns/op %g creates/s\n", r, c, v)
	}
	if err := os.WriteFile(good, []byte(line(0, "off", 100)+line(0, "on", 90)+"\n"+line(1, "on", 95)+line(1, "off", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, order, err := readResults(good)
	if err != nil || len(rs) != 4 || !slices.Equal(order, []string{"off", "on"}) {
		t.Fatalf("%v %v %v", rs, order, err)
	}
	// The header names the base, whichever ran first.
	headed := filepath.Join(dir, "headed")
	if err := os.WriteFile(headed, []byte(configsHeader+"on off\n"+line(0, "off", 100)+line(0, "on", 90)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, order, err := readResults(headed); err != nil || !slices.Equal(order, []string{"on", "off"}) {
		t.Fatalf("with a header: %v %v", order, err)
	}
	twice := filepath.Join(dir, "twice")
	if err := os.WriteFile(twice, []byte(line(0, "off", 100)+line(0, "on", 90)+line(0, "off", 80)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readResults(twice); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("two sets in one file: %v", err)
	}
}
