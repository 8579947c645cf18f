package app

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The Go runtime's soft memory limit (GOMEMLIMIT). Upstream's components
// and etcd set none (they leave GOMEMLIMIT to the environment); kubebus
// runs etcd, NATS and every component in one process, so it sets one by
// default: 90% of the cgroup's memory.max when the process runs in a
// limited cgroup, else the smaller of 1 GiB and half the machine's memory.
// The limit is soft: past it the collector runs more often (never above
// about half the CPU), nothing is refused. GOMEMLIMIT in the environment
// wins over the flag.

const (
	defaultMemoryLimit = 1 << 30
	memoryLimitFlag    = "memory-limit"
)

// memoryLimit decides the limit from the flag's value ("0": derived,
// "none": no limit, else a quantity such as 768Mi), the machine's memory
// and the cgroup's limit (0 when unknown or unlimited).
func memoryLimit(flag string, machine, cgroup int64) (int64, error) {
	switch strings.TrimSpace(flag) {
	case "none":
		return math.MaxInt64, nil
	case "", "0":
		if cgroup > 0 {
			return cgroup / 10 * 9, nil
		}
		if machine > 0 {
			return min(int64(defaultMemoryLimit), machine/2), nil
		}
		return defaultMemoryLimit, nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: not a quantity (such as 768Mi), 0 or none: %w", memoryLimitFlag, flag, err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("--%s %q: negative", memoryLimitFlag, flag)
	}
	return q.Value(), nil
}

// applyMemoryLimit sets the runtime's memory limit from the flag unless
// GOMEMLIMIT is set, and says what it did.
func applyMemoryLimit(flag string) (string, error) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		return "GOMEMLIMIT=" + env + " from the environment", nil
	}
	limit, err := memoryLimit(flag, machineMemory(), cgroupMemoryMax())
	if err != nil {
		return "", err
	}
	debug.SetMemoryLimit(limit)
	if limit == math.MaxInt64 {
		return "none", nil
	}
	return resource.NewQuantity(limit, resource.BinarySI).String(), nil
}

// machineMemory is MemTotal from /proc/meminfo in bytes (0 when unknown).
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupMemoryMax is the cgroup v2 memory.max of this process's cgroup in
// bytes (0 when unlimited or unknown).
func cgroupMemoryMax() int64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		v, err := os.ReadFile("/sys/fs/cgroup" + path + "/memory.max")
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		if err != nil { // "max"
			return 0
		}
		return n
	}
	return 0
}
