package host

import "testing"

func TestParseMemInfo(t *testing.T) {
	m, err := ParseMemInfo([]byte("MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   1000 kB\n"))
	if err != nil || m.Total != 24000000*1024 || m.Available != 1000*1024 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if _, err := ParseMemInfo([]byte("MemTotal: 5 kB\n")); err == nil {
		t.Fatal("meminfo without MemAvailable accepted")
	}
}

func TestParseOSRelease(t *testing.T) {
	if got := ParseOSRelease([]byte("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Fatalf("got %q", got)
	}
	if got := ParseOSRelease(nil); got != "Linux" {
		t.Fatalf("got %q", got)
	}
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name                  string
		mem                   MemInfo
		avail, total, pid, mx uint64
		want                  Pressure
	}{
		{"healthy", MemInfo{8 << 30, 4 << 30}, 50, 100, 100, 1000, Pressure{}},
		{"memory", MemInfo{8 << 30, 99 << 20}, 50, 100, 100, 1000, Pressure{Memory: true}},
		{"memory at the threshold", MemInfo{8 << 30, 100 << 20}, 50, 100, 100, 1000, Pressure{}},
		{"disk", MemInfo{8 << 30, 4 << 30}, 9, 100, 100, 1000, Pressure{Disk: true}},
		{"disk at 10%", MemInfo{8 << 30, 4 << 30}, 10, 100, 100, 1000, Pressure{}},
		{"pids", MemInfo{8 << 30, 4 << 30}, 50, 100, 901, 1000, Pressure{PID: true}},
		{"no readings", MemInfo{}, 0, 0, 0, 0, Pressure{}},
	}
	for _, c := range cases {
		if got := Evaluate(c.mem, c.avail, c.total, c.pid, c.mx); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
