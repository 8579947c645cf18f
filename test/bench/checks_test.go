package bench

import (
	"strings"
	"testing"
)

func TestCheckSums(t *testing.T) {
	t.Parallel()
	const exposition = `# HELP authorization_duration_seconds Authorization duration in seconds broken out by result.
# TYPE authorization_duration_seconds histogram
authorization_duration_seconds_bucket{result="allowed",le="0.001"} 7
authorization_duration_seconds_bucket{result="allowed",le="+Inf"} 7
authorization_duration_seconds_sum{result="allowed"} 0.25
authorization_duration_seconds_count{result="allowed"} 7
authorization_duration_seconds_bucket{result="no-opinion",le="+Inf"} 1
authorization_duration_seconds_sum{result="no-opinion"} 0.5
authorization_duration_seconds_count{result="no-opinion"} 1
# TYPE authentication_duration_seconds histogram
authentication_duration_seconds_bucket{result="success",le="+Inf"} 2
authentication_duration_seconds_sum{result="success"} 0.125
authentication_duration_seconds_count{result="success"} 2
# TYPE apiserver_admission_step_admission_duration_seconds histogram
apiserver_admission_step_admission_duration_seconds_bucket{operation="CREATE",rejected="false",type="admit",le="+Inf"} 1
apiserver_admission_step_admission_duration_seconds_sum{operation="CREATE",rejected="false",type="admit"} 2
apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit"} 1
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{operation="get",le="+Inf"} 1
etcd_request_duration_seconds_sum{operation="get"} 9
etcd_request_duration_seconds_count{operation="get"} 1
`
	sums, err := checkSums(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"authz-s": 0.75, "authn-s": 0.125, "admission-s": 2}
	for name, v := range want {
		if sums[name] != v {
			t.Errorf("%s = %v, want %v", name, sums[name], v)
		}
	}
	cut := exposition[:strings.Index(exposition, "# TYPE apiserver_admission_step")]
	if _, err := checkSums(strings.NewReader(cut)); err == nil {
		t.Error("an exposition without the admission histogram was accepted")
	}
	counter := strings.Replace(exposition, "# TYPE authentication_duration_seconds histogram", "# TYPE authentication_duration_seconds summary", 1)
	counter = strings.ReplaceAll(counter, `authentication_duration_seconds_bucket{result="success",le="+Inf"} 2`+"\n", "")
	if _, err := checkSums(strings.NewReader(counter)); err == nil {
		t.Error("a summary was taken for the authentication histogram")
	}
}
