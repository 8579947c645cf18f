package dns

import "testing"

func TestServiceIP(t *testing.T) {
	for _, tt := range []struct{ cidr, want string }{
		{"10.96.0.0/12", "10.96.0.10"},
		{"10.100.0.0/16", "10.100.0.10"},
		{"10.96.5.7/12", "10.96.0.10"}, // masked first
		{"fd00:10:96::/108", "fd00:10:96::a"},
		{"10.96.0.0/12,fd00::/108", "10.96.0.10"},
	} {
		got, err := ServiceIP(tt.cidr)
		if err != nil || got.String() != tt.want {
			t.Errorf("ServiceIP(%q) = %v, %v; want %s", tt.cidr, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "10.96.0.0", "10.0.0.0/29", "nonsense/12"} {
		if got, err := ServiceIP(bad); err == nil {
			t.Errorf("ServiceIP(%q) = %v, want an error", bad, got)
		}
	}
}
