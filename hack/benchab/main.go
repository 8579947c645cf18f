// Command benchab runs one end-to-end benchmark of test/bench against
// several server configurations in interleaved rounds and reports each
// configuration against the first: the ratio of the medians with a
// bootstrap interval (the rounds resampled), and the median and mean of
// the per-round ratios.
//
// On a shared 2-core VM one configuration's runs spread by ±20%, so a
// difference of a few percent shows only over many interleaved rounds.
// Each round runs the configurations in an order drawn afresh (from
// -seed and the round's number), so none always runs first after a quiet
// spell or right after the same other one; sets that will be pooled
// should each have their own -seed. It is how the comparisons of
// docs/benchmarks.md are made, e.g. issue 13's goal:
//
//	make build
//	go test -c -o /tmp/bench.test ./test/bench
//	go run ./hack/benchab -test /tmp/bench.test -bin bin/kubebus -rounds 20 -out /tmp/set1.txt \
//	  -config 'on' \
//	  -config 'off|--authorization-mode=AlwaysAllow --disable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,PodSecurity,ResourceQuota'
//
// A configuration is "label|server flags|VAR=value ..." (the last two
// optional): the flags go to $KUBEBUS_BENCH_SERVER_ARGS, the variables to
// the benchmark's environment. -bin may be given per configuration as
// "label|flags|vars|binary" to compare two builds; relative paths are
// taken from where benchab runs. Every result line is written to -out (a
// new file) as it comes; -from summarises such a file instead of running,
// -base picking the configuration the others are compared with, and
// -unit the metric (total-cpu-s is the CPU of the server, the hollow
// nodes and the client together).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	label string
	args  string
	env   []string
	bin   string
}

// parseConfig reads "label|server flags|VAR=value ...|binary".
func parseConfig(s, defaultBin string) (config, error) {
	parts := strings.SplitN(s, "|", 4)
	c := config{label: strings.TrimSpace(parts[0]), bin: defaultBin}
	if c.label == "" || strings.ContainsAny(c.label, " \t") {
		return c, fmt.Errorf("config %q: the label must be one word", s)
	}
	if len(parts) > 1 {
		c.args = strings.TrimSpace(parts[1])
	}
	if len(parts) > 2 {
		for _, kv := range strings.Fields(parts[2]) {
			if !strings.Contains(kv, "=") {
				return c, fmt.Errorf("config %q: %q is not VAR=value", s, kv)
			}
			c.env = append(c.env, kv)
		}
	}
	if len(parts) > 3 && strings.TrimSpace(parts[3]) != "" {
		c.bin = strings.TrimSpace(parts[3])
	}
	if c.bin == "" {
		return c, fmt.Errorf("config %q: no kubebus binary (-bin)", s)
	}
	return c, nil
}

type configFlags []string

func (c *configFlags) String() string     { return strings.Join(*c, ", ") }
func (c *configFlags) Set(s string) error { *c = append(*c, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchab:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		configs configFlags
		testBin = flag.String("test", "", "the compiled test/bench binary (go test -c ./test/bench)")
		bin     = flag.String("bin", "", "the kubebus binary for every configuration that names none")
		bench   = flag.String("bench", "NodeLoadCreates$", "the benchmark (a -test.bench pattern matching one)")
		rounds  = flag.Int("rounds", 10, "rounds; each runs every configuration once")
		seed    = flag.Int64("seed", 0, "draws the rounds' orders: give each set of a comparison its own")
		unit    = flag.String("unit", "creates/s", "the metric the configurations are compared on")
		out     = flag.String("out", "", "write every result line to this new file")
		from    = flag.String("from", "", "summarise this -out file instead of running")
		base    = flag.String("base", "", "with -from: the configuration the others are compared with (default the first)")
	)
	flag.Var(&configs, "config", "label|server flags|VAR=value ...|binary (repeat; the first is the base)")
	flag.Parse()
	if *from != "" {
		rs, order, err := readResults(*from)
		if err != nil {
			return err
		}
		if order, err = withBase(order, *base); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return printSummary(rs, order, *unit)
	}
	if *base != "" {
		return errors.New("-base is for -from: when running, the first -config is the base")
	}
	if *testBin == "" || len(configs) == 0 {
		return errors.New("-test and at least one -config are required (or -from)")
	}
	// The benchmark runs in test/bench: relative paths would name files there.
	test, err := filepath.Abs(*testBin)
	if err != nil {
		return err
	}
	var cs []config
	order := make([]string, 0, len(configs))
	for _, s := range configs {
		c, err := parseConfig(s, *bin)
		if err != nil {
			return err
		}
		if slices.Contains(order, c.label) {
			return fmt.Errorf("two configurations are labelled %q", c.label)
		}
		if c.bin, err = filepath.Abs(c.bin); err != nil {
			return err
		}
		cs = append(cs, c)
		order = append(order, c.label)
	}
	var outFile *os.File
	if *out != "" {
		// A new file per set: rounds are numbered from 0 in every set.
		if outFile, err = os.OpenFile(*out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
			return fmt.Errorf("-out: %w (each set needs a file of its own)", err)
		}
		defer outFile.Close()
		if _, err := fmt.Fprintf(outFile, "%s%s\n", configsHeader, strings.Join(order, " ")); err != nil {
			return fmt.Errorf("-out: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rs []result
	for r := 0; r < *rounds; r++ {
		for _, i := range roundOrder(*seed, r, len(cs)) {
			c := cs[i]
			m, line, err := runOnce(ctx, test, *bench, c)
			if err != nil {
				if len(rs) > 0 {
					fmt.Println("the rounds so far:")
					_ = printSummary(rs, order, *unit)
				}
				return fmt.Errorf("round %d, %s: %w", r, c.label, err)
			}
			rs = append(rs, result{round: r, config: c.label, metrics: m})
			rec := fmt.Sprintf("%d %s %s", r, c.label, line)
			fmt.Println(rec)
			if outFile != nil {
				if _, err := fmt.Fprintln(outFile, rec); err != nil {
					return fmt.Errorf("-out: %w", err)
				}
			}
		}
	}
	return printSummary(rs, order, *unit)
}

// withBase moves base to the front of order ("" leaves order as it is).
func withBase(order []string, base string) ([]string, error) {
	if base == "" {
		return order, nil
	}
	i := slices.Index(order, base)
	if i < 0 {
		return nil, fmt.Errorf("-base %q: no such configuration (there are %s)", base, strings.Join(order, ", "))
	}
	return append([]string{base}, slices.Delete(slices.Clone(order), i, i+1)...), nil
}

// printSummary prints the summary, or fails when no result has unit.
func printSummary(rs []result, order []string, unit string) error {
	if !hasUnit(rs, unit) {
		return fmt.Errorf("no result has the metric %q", unit)
	}
	fmt.Print(summary(rs, order, unit))
	return nil
}

// runOnce runs the benchmark once against c and returns its metrics and
// result line.
func runOnce(ctx context.Context, testBin, bench string, c config) (map[string]float64, string, error) {
	cmd := exec.CommandContext(ctx, testBin, "-test.run", "^$", "-test.bench", bench, "-test.benchtime", "1x")
	cmd.Dir = testDir()
	// The benchmark's servers and hollow nodes are its children, in its
	// process group: when the set is stopped, the group goes, so none is
	// left to run during a later measurement.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "KUBEBUS_REQUIRE_PREREQS=1", "KUBEBUS_BIN="+c.bin, "KUBEBUS_BENCH_SERVER_ARGS="+c.args)
	cmd.Env = append(cmd.Env, c.env...)
	outb, err := cmd.CombinedOutput()
	var found []string
	var metrics map[string]float64
	for _, line := range strings.Split(string(outb), "\n") {
		if m, ok := parseBenchLine(line); ok {
			metrics, found = m, append(found, strings.Join(strings.Fields(line), " "))
		}
	}
	if err != nil || len(found) != 1 {
		tail := string(outb)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return nil, "", fmt.Errorf("benchmark run (err %v, %d result lines):\n%s", err, len(found), tail)
	}
	return metrics, found[0], nil
}

// testDir is where the benchmark binary runs: test/bench, as under go
// test, when benchab runs from the repository's root.
func testDir() string {
	if st, err := os.Stat("test/bench"); err == nil && st.IsDir() {
		return "test/bench"
	}
	return ""
}

// configsHeader starts an -out file's first line, which names the
// configurations in their -config order (the base first).
const configsHeader = "# configurations: "

// readResults reads an -out file: the header, then "round label
// Benchmark... metrics" lines. order is the header's labels, then any
// others in the order they first appear.
func readResults(path string) (rs []result, order []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	seen, recorded := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if h, ok := strings.CutPrefix(sc.Text(), configsHeader); ok {
			for _, label := range strings.Fields(h) {
				if !seen[label] {
					seen[label] = true
					order = append(order, label)
				}
			}
			continue
		}
		rs2, label, ok, perr := parseRecord(sc.Text())
		if perr != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, perr)
		}
		if !ok {
			continue
		}
		k := fmt.Sprintf("%d %s", rs2.round, label)
		if recorded[k] {
			return nil, nil, fmt.Errorf("%s:%d: round %d of %s is there twice (two sets in one file?)", path, n, rs2.round, label)
		}
		recorded[k] = true
		rs = append(rs, rs2)
		if !seen[label] {
			seen[label] = true
			order = append(order, label)
		}
	}
	return rs, order, sc.Err()
}

// parseRecord reads one -out line; ok is false for blank lines.
func parseRecord(line string) (r result, label string, ok bool, err error) {
	f := strings.SplitN(strings.TrimSpace(line), " ", 3)
	if len(f) == 1 && f[0] == "" {
		return r, "", false, nil
	}
	if len(f) < 3 {
		return r, "", false, fmt.Errorf("not a result record: %q", line)
	}
	round, err := strconv.Atoi(f[0])
	if err != nil {
		return r, "", false, fmt.Errorf("round %q: %w", f[0], err)
	}
	m, ok := parseBenchLine(f[2])
	if !ok {
		return r, "", false, fmt.Errorf("no benchmark result in %q", line)
	}
	return result{round: round, config: f[1], metrics: m}, f[1], true, nil
}
