package main

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
)

// result is one run of one configuration: the metrics of its benchmark
// line by unit ("creates/s", "server-cpu-s", ...).
type result struct {
	round   int
	config  string
	metrics map[string]float64
}

// parseBenchLine reads the metrics of a `go test -bench` result line
// ("BenchmarkX-2  1  3401527371 ns/op  588.0 creates/s ..."). ok is false
// for any other line.
func parseBenchLine(line string) (metrics map[string]float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return nil, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return nil, false // a name line without results
	}
	if len(f)%2 != 0 {
		return nil, false // a value without a unit
	}
	metrics = map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, false
		}
		metrics[f[i+1]] = v
	}
	if len(metrics) == 0 {
		return nil, false
	}
	var total float64
	n := 0
	for _, u := range []string{"server-cpu-s", "nodes-cpu-s", "client-cpu-s"} {
		if v, ok := metrics[u]; ok {
			total += v
			n++
		}
	}
	if n > 1 {
		metrics["total-cpu-s"] = total // the CPU of every process measured
	}
	return metrics, true
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// values returns config's values of unit, in round order.
func values(rs []result, config, unit string) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := r.metrics[unit]; ok && r.config == config {
			out = append(out, v)
		}
	}
	return out
}

// pairedRatios returns a's value of unit over b's, for every round that
// has both.
func pairedRatios(rs []result, a, b, unit string) []float64 {
	va, vb := pairedValues(rs, a, b, unit)
	var out []float64
	for i := range va {
		if vb[i] != 0 {
			out = append(out, va[i]/vb[i])
		}
	}
	return out
}

// roundOrder is the order the n configurations run in round r of the set
// with seed: a permutation drawn afresh each round (from the seed and the
// round's number, so a set can be repeated, and a set with another seed
// gets other orders), so no configuration always follows the same other
// one and nothing left over from one run is borne by one configuration.
func roundOrder(seed int64, r, n int) []int {
	return rand.New(rand.NewSource(seed*1_000_003 + int64(r) + 1)).Perm(n)
}

// hasUnit reports whether any result has unit.
func hasUnit(rs []result, unit string) bool {
	for _, r := range rs {
		if _, ok := r.metrics[unit]; ok {
			return true
		}
	}
	return false
}

// pairedValues returns a's and b's values of unit in the rounds that have
// both, in round order.
func pairedValues(rs []result, a, b, unit string) (va, vb []float64) {
	byRound := map[int]map[string]float64{}
	for _, r := range rs {
		if v, ok := r.metrics[unit]; ok && (r.config == a || r.config == b) {
			if byRound[r.round] == nil {
				byRound[r.round] = map[string]float64{}
			}
			byRound[r.round][r.config] = v
		}
	}
	rounds := make([]int, 0, len(byRound))
	for n := range byRound {
		rounds = append(rounds, n)
	}
	slices.Sort(rounds)
	for _, n := range rounds {
		x, okA := byRound[n][a]
		y, okB := byRound[n][b]
		if okA && okB {
			va, vb = append(va, x), append(vb, y)
		}
	}
	return va, vb
}

// bootstrapRatio is the 5th and 95th percentile of median(a)/median(b)
// over resamples of the rounds (with replacement; a[i] and b[i] are one
// round's, and stay together), from a fixed seed. Resamples whose b
// median is 0 are left out.
func bootstrapRatio(a, b []float64, resamples int) (lo, hi float64) {
	if len(a) == 0 || len(a) != len(b) || resamples < 20 {
		return 0, 0
	}
	rng := rand.New(rand.NewSource(1))
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	ratios := make([]float64, 0, resamples)
	for range resamples {
		for i := range ra {
			j := rng.Intn(len(a))
			ra[i], rb[i] = a[j], b[j]
		}
		if mb := median(rb); mb != 0 {
			ratios = append(ratios, median(ra)/mb)
		}
	}
	if len(ratios) == 0 {
		return 0, 0
	}
	slices.Sort(ratios)
	return ratios[len(ratios)*5/100], ratios[len(ratios)*95/100]
}

// summary is the report of a set: per configuration the median and mean
// of every unit, then every configuration against the first on unit.
func summary(rs []result, configs []string, unit string) string {
	var b strings.Builder
	units := map[string]bool{}
	for _, r := range rs {
		for u := range r.metrics {
			units[u] = true
		}
	}
	names := make([]string, 0, len(units))
	for u := range units {
		names = append(names, u)
	}
	slices.Sort(names)
	for _, c := range configs {
		fmt.Fprintf(&b, "%s:\n", c)
		for _, u := range names {
			vs := values(rs, c, u)
			if len(vs) == 0 {
				continue
			}
			fmt.Fprintf(&b, "  %-14s median %10.4g  mean %10.4g  (n=%d)\n", u, median(vs), mean(vs), len(vs))
		}
	}
	if len(configs) < 2 {
		return b.String()
	}
	base := configs[0]
	for _, c := range configs[1:] {
		a, bb := values(rs, c, unit), values(rs, base, unit)
		pr := pairedRatios(rs, c, base, unit)
		pa, pb := pairedValues(rs, c, base, unit)
		lo, hi := bootstrapRatio(pa, pb, 2000)
		fmt.Fprintf(&b, "%s / %s, %s: ratio of medians %.3f (bootstrap over rounds, 90%%: %.3f to %.3f); per-round ratios: median %.3f, mean %.3f (n=%d)\n",
			c, base, unit, safeDiv(median(a), median(bb)), lo, hi, median(pr), mean(pr), len(pr))
	}
	return b.String()
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
