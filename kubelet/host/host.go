// Package host reads what a kubelet reports about the machine it runs on:
// capacity (cpu, memory, ephemeral storage), the system info of the node
// status, and the pressure conditions. The parsers are pure functions of
// the files' contents; the readers only open the files.
package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MemInfo is the part of /proc/meminfo the kubelet uses, in bytes.
type MemInfo struct{ Total, Available uint64 }

// ParseMemInfo reads MemTotal and MemAvailable from /proc/meminfo's text.
func ParseMemInfo(b []byte) (MemInfo, error) {
	var m MemInfo
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		if len(f) == 3 && f[2] == "kB" {
			v *= 1024
		}
		switch f[0] {
		case "MemTotal:":
			m.Total, seen = v, seen|1
		case "MemAvailable:":
			m.Available, seen = v, seen|2
		}
	}
	if seen != 3 {
		return m, fmt.Errorf("host: meminfo lacks MemTotal or MemAvailable")
	}
	return m, nil
}

// ParseOSRelease returns PRETTY_NAME from /etc/os-release's text.
func ParseOSRelease(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

// Capacity is the node's capacity: the machine's cpus and memory, the
// size of the filesystem holding dir, and pods.
func Capacity(dir string, pods int64) (corev1.ResourceList, error) {
	mb, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	mem, err := ParseMemInfo(mb)
	if err != nil {
		return nil, err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return nil, fmt.Errorf("host: statfs %s: %w", dir, err)
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(mem.Total), resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
	}, nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SystemInfo is the node status' nodeInfo for this machine.
func SystemInfo(kubeletVersion, runtimeVersion string) corev1.NodeSystemInfo {
	var u unix.Utsname
	kernel := ""
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	osImage := "Linux"
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		osImage = ParseOSRelease(b)
	}
	return corev1.NodeSystemInfo{
		MachineID: readTrim("/etc/machine-id"), BootID: readTrim("/proc/sys/kernel/random/boot_id"),
		SystemUUID:    readTrim("/sys/class/dmi/id/product_uuid"),
		KernelVersion: kernel, OSImage: osImage, ContainerRuntimeVersion: runtimeVersion,
		KubeletVersion: kubeletVersion, KubeProxyVersion: kubeletVersion,
		OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
	}
}

// Thresholds of the pressure conditions, as upstream's default hard
// eviction thresholds.
const (
	MemoryAvailableMin = 100 << 20 // memory.available < 100Mi
	DiskAvailablePct   = 10        // nodefs.available < 10%
	PIDUsedPct         = 90
)

// Pressure is the machine's pressure conditions.
type Pressure struct{ Memory, Disk, PID bool }

// Evaluate decides the pressure conditions from readings (pure).
func Evaluate(mem MemInfo, diskAvail, diskTotal uint64, pids, pidMax uint64) Pressure {
	p := Pressure{Memory: mem.Total > 0 && mem.Available < MemoryAvailableMin}
	if diskTotal > 0 {
		p.Disk = diskAvail*100 < diskTotal*DiskAvailablePct
	}
	if pidMax > 0 {
		p.PID = pids*100 > pidMax*PIDUsedPct
	}
	return p
}

// ReadPressure reads the machine and evaluates its pressure conditions;
// dir is the kubelet's root directory (nodefs).
func ReadPressure(dir string) (Pressure, error) {
	mb, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Pressure{}, fmt.Errorf("host: %w", err)
	}
	mem, err := ParseMemInfo(mb)
	if err != nil {
		return Pressure{}, err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return Pressure{}, fmt.Errorf("host: statfs %s: %w", dir, err)
	}
	pidMax, _ := strconv.ParseUint(readTrim("/proc/sys/kernel/pid_max"), 10, 64)
	var pids uint64
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids++
			}
		}
	}
	return Evaluate(mem, fs.Bavail*uint64(fs.Bsize), fs.Blocks*uint64(fs.Bsize), pids, pidMax), nil
}
