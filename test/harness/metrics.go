package harness

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
)

// APIRequests sums the API server's apiserver_request_total series whose
// label text contains every one of match (e.g. `verb="list"`,
// `subresource="binding"`, `code="201"`), read from its /metrics.
func (s *Server) APIRequests(t testing.TB, match ...string) float64 {
	t.Helper()
	resp, err := s.HTTPClient(t).Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		for _, m := range match {
			if !strings.Contains(line, m) {
				continue next
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("bad metric line %q", line)
		}
		total += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	return total
}
