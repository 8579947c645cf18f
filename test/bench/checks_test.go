package bench

import "testing"

func TestHistogramSums(t *testing.T) {
	t.Parallel()
	const exposition = `# HELP authorization_duration_seconds Authorization duration in seconds broken out by result.
# TYPE authorization_duration_seconds histogram
authorization_duration_seconds_bucket{result="allowed",le="0.001"} 7
authorization_duration_seconds_sum{result="allowed"} 0.25
authorization_duration_seconds_count{result="allowed"} 7
authorization_duration_seconds_sum{result="no-opinion"} 0.5
apiserver_request_total{code="200",resource="pods",subresource="",verb="list"} 3
etcd_request_duration_seconds_sum{operation="get"} 1e-3
`
	sums, err := histogramSums(exposition)
	if err != nil {
		t.Fatal(err)
	}
	if got := sums["authorization_duration_seconds"]; got != 0.75 {
		t.Errorf("authorization_duration_seconds = %v, want 0.75", got)
	}
	if got := sums["etcd_request_duration_seconds"]; got != 0.001 {
		t.Errorf("etcd_request_duration_seconds = %v, want 0.001", got)
	}
	if len(sums) != 2 {
		t.Errorf("families = %v, want the two histograms only", sums)
	}
	if _, err := histogramSums("x_sum{a=\"b\"} notanumber\n"); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}
