package main

import (
	"math"
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
