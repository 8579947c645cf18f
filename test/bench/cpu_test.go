package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100
// on every Linux architecture Go supports).
const clockTicks = 100

// cpuSeconds is the user+system CPU time process pid has used so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from after its ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// cpuMeter measures the CPU seconds each named process uses between its
// start and report.
type cpuMeter struct {
	names []string
	pids  []int
	start []float64
}

func startCPUMeter(b *testing.B, procs map[string]int) *cpuMeter {
	b.Helper()
	m := &cpuMeter{}
	for name, pid := range procs {
		s, err := cpuSeconds(pid)
		if err != nil {
			b.Fatal(err)
		}
		m.names, m.pids, m.start = append(m.names, name), append(m.pids, pid), append(m.start, s)
	}
	return m
}

// report adds "<name>-cpu-s" metrics: CPU seconds used since the start.
func (m *cpuMeter) report(b *testing.B) {
	b.Helper()
	for i, pid := range m.pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(s-m.start[i], m.names[i]+"-cpu-s")
	}
}

// profileLength returns $KUBEBUS_BENCH_PROFILE_SECONDS as a duration when
// it is set, else d. The variable matters only with $KUBEBUS_BENCH_PROFILE:
// a profile long enough for the server to finish the work a workload
// started and go idle compares two servers per object rather than per
// second. A benchmark calls it before its long set-up, so that a bad value
// fails at once.
func profileLength(b *testing.B, d time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv("KUBEBUS_BENCH_PROFILE_SECONDS")
	if v == "" {
		return d
	}
	secs, err := strconv.Atoi(v)
	if err != nil || secs < 1 {
		b.Fatalf("KUBEBUS_BENCH_PROFILE_SECONDS=%q: want a whole number of seconds", v)
	}
	return time.Duration(secs) * time.Second
}

// dumpMetrics, when $KUBEBUS_BENCH_PROFILE names a directory, writes the
// server's /metrics to <dir>/<benchmark>.<suffix>.metrics.
func dumpMetrics(b *testing.B, client *http.Client, url, suffix string) {
	b.Helper()
	dir := os.Getenv("KUBEBUS_BENCH_PROFILE")
	if dir == "" {
		return
	}
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		b.Errorf("reading /metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+"."+suffix+".metrics"), body, 0o644)
	}
	if err != nil {
		b.Errorf("saving /metrics: %v", err)
	}
}

// profileServer, when $KUBEBUS_BENCH_PROFILE names a directory, fetches
// a CPU profile of the server for the next d (or profileLength's
// override) into <dir>/<benchmark>.pprof and returns a function that
// waits for it; otherwise it does nothing.
func profileServer(b *testing.B, client *http.Client, url string, d time.Duration) (wait func()) {
	b.Helper()
	dir := os.Getenv("KUBEBUS_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	d = profileLength(b, d)
	path := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+".pprof")
	done := make(chan error, 1)
	go func() {
		resp, err := client.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", url, int(d.Seconds())))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("profiling the server: %v", err)
		} else {
			b.Logf("server CPU profile: %s", path)
		}
	}
}

// checkFamilies are the API server's histograms of the time its checks
// take, by the metric each one's seconds are reported as.
var checkFamilies = map[string]string{
	"authn-s":     "authentication_duration_seconds",
	"authz-s":     "authorization_duration_seconds",
	"admission-s": "apiserver_admission_step_admission_duration_seconds",
}

// checkMeter measures the seconds the server spends authenticating,
// authorizing and admitting requests between its start and report, from
// the sums of its /metrics histograms (every label set added up). They are
// wall-clock seconds inside those calls, time waiting for a CPU included.
type checkMeter struct {
	client *http.Client
	url    string
	start  map[string]float64
}

func startCheckMeter(b *testing.B, client *http.Client, url string) *checkMeter {
	b.Helper()
	m := &checkMeter{client: client, url: url}
	m.start = m.read(b)
	return m
}

// report adds the "authn-s", "authz-s" and "admission-s" metrics.
func (m *checkMeter) report(b *testing.B) {
	b.Helper()
	now := m.read(b)
	for name := range checkFamilies {
		b.ReportMetric(now[name]-m.start[name], name)
	}
}

func (m *checkMeter) read(b *testing.B) map[string]float64 {
	b.Helper()
	resp, err := m.client.Get(m.url + "/metrics")
	if err != nil {
		b.Fatalf("reading /metrics: %v", err)
	}
	defer resp.Body.Close()
	out, err := checkSums(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// checkSums reads a Prometheus text exposition and returns, for each of
// checkFamilies, its histogram's sum over all label sets.
func checkSums(exposition io.Reader) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(exposition)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	out := map[string]float64{}
	for name, family := range checkFamilies {
		f, ok := families[family]
		if !ok || f.GetType() != dto.MetricType_HISTOGRAM {
			return nil, fmt.Errorf("/metrics has no histogram %s", family)
		}
		for _, series := range f.GetMetric() {
			out[name] += series.GetHistogram().GetSampleSum()
		}
	}
	return out, nil
}
