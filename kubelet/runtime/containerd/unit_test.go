package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestContainerStatus(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := created.Add(time.Second)
	finished := created.Add(time.Minute)
	base := map[string]string{
		runtime.LabelSandbox: "sb", runtime.LabelContainer: "app", runtime.LabelAttempt: "2",
		labelImageRef: "busybox", labelLogPath: "/logs/app.log", "user": "label",
	}
	with := func(extra map[string]string) containers.Container {
		l := map[string]string{}
		for k, v := range base {
			l[k] = v
		}
		for k, v := range extra {
			l[k] = v
		}
		return containers.Container{ID: "c1", Image: "docker.io/library/busybox:latest", Labels: l, CreatedAt: created}
	}
	startedL := map[string]string{labelStartedAt: formatTime(started)}
	for name, tc := range map[string]struct {
		info containers.Container
		task taskState
		want runtime.Container // only the fields that vary
	}{
		"created, no task": {info: with(nil), want: runtime.Container{State: runtime.ContainerCreated}},
		"running": {info: with(startedL), task: taskState{exists: true, status: client.Running},
			want: runtime.Container{State: runtime.ContainerRunning, StartedAt: started}},
		"paused counts as running": {info: with(startedL), task: taskState{exists: true, status: client.Paused},
			want: runtime.Container{State: runtime.ContainerRunning, StartedAt: started}},
		"task created": {info: with(startedL), task: taskState{exists: true, status: client.Created},
			want: runtime.Container{State: runtime.ContainerCreated, StartedAt: started}},
		"stopped task, error": {info: with(startedL), task: taskState{exists: true, status: client.Stopped, exitStatus: 3, exitedAt: finished},
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, FinishedAt: finished, ExitCode: 3, Reason: "Error"}},
		"stopped task, completed": {info: with(startedL), task: taskState{exists: true, status: client.Stopped, exitedAt: finished},
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, FinishedAt: finished, Reason: "Completed"}},
		"reaped": {info: with(map[string]string{labelStartedAt: formatTime(started), labelExitCode: "137", labelFinishedAt: formatTime(finished), labelReason: "OOMKilled"}),
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, FinishedAt: finished, ExitCode: 137, Reason: "OOMKilled"}},
		"start error": {info: with(map[string]string{labelStartedAt: formatTime(started), labelExitCode: "128", labelFinishedAt: formatTime(started), labelReason: ReasonStartError}),
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, FinishedAt: started, ExitCode: 128, Reason: ReasonStartError}},
		"task lost": {info: with(startedL),
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, ExitCode: 255, Reason: "Error"}},
		"task being made": {info: with(startedL), task: taskState{starting: true},
			want: runtime.Container{State: runtime.ContainerCreated, StartedAt: started}},
		"start failed while listed": {info: with(map[string]string{labelStartedAt: formatTime(started), labelExitCode: "128", labelFinishedAt: formatTime(started), labelReason: ReasonStartError}),
			task: taskState{starting: true},
			want: runtime.Container{State: runtime.ContainerExited, StartedAt: started, FinishedAt: started, ExitCode: 128, Reason: ReasonStartError}},
		"unknown task state": {info: with(startedL), task: taskState{exists: true, status: client.Unknown},
			want: runtime.Container{State: runtime.ContainerUnknown, StartedAt: started}},
	} {
		t.Run(name, func(t *testing.T) {
			got := containerStatus(tc.info, tc.task, "sha256:img")
			want := tc.want
			want.ID, want.SandboxID, want.Name, want.Attempt, want.Image, want.ImageID = "c1", "sb", "app", 2, "busybox", "sha256:img"
			want.CreatedAt, want.LogPath = created, "/logs/app.log"
			want.Labels = map[string]string{runtime.LabelSandbox: "sb", runtime.LabelContainer: "app", runtime.LabelAttempt: "2", "user": "label"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestExitReasonAndOOMCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int32
		oom  bool
		want string
	}{{0, false, "Completed"}, {1, false, "Error"}, {137, false, "Error"}, {137, true, "OOMKilled"}, {0, true, "OOMKilled"}} {
		if got := exitReason(tc.code, tc.oom); got != tc.want {
			t.Errorf("exitReason(%d, %v) = %q, want %q", tc.code, tc.oom, got, tc.want)
		}
	}
	v1 := "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
	v2 := "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n"
	if oomKillCount([]byte(v1)) != 2 || oomKillCount([]byte(v2)) != 1 || oomKillCount([]byte("oom 3\n")) != 0 {
		t.Error("oomKillCount misreads memory.oom_control or memory.events")
	}
	if cgroupOOMKilled("") || cgroupOOMKilled("system.slice:kubebus:x") || cgroupOOMKilled("/no/such/cgroup") {
		t.Error("cgroupOOMKilled true without a cgroup")
	}
}

func TestValidateConfigs(t *testing.T) {
	t.Parallel()
	neg := int64(-5)
	for name, cfg := range map[string]runtime.ContainerConfig{
		"no name":         {Image: "i"},
		"no image":        {Name: "n"},
		"negative try":    {Name: "n", Image: "i", Attempt: -1},
		"relative log":    {Name: "n", Image: "i", LogPath: "l"},
		"relative cwd":    {Name: "n", Image: "i", WorkingDir: "w"},
		"negative memory": {Name: "n", Image: "i", MemoryLimitBytes: -1},
		"small quota":     {Name: "n", Image: "i", CPUQuota: 999},
		"negative uid":    {Name: "n", Image: "i", RunAsUser: &neg},
		"negative gid":    {Name: "n", Image: "i", RunAsGroup: &neg},
		"env key with =":  {Name: "n", Image: "i", Env: []runtime.KeyValue{{Key: "a=b"}}},
		"empty env key":   {Name: "n", Image: "i", Env: []runtime.KeyValue{{Value: "x"}}},
		"relative mount":  {Name: "n", Image: "i", Mounts: []runtime.Mount{{HostPath: "/a", ContainerPath: "b"}}},
	} {
		if err := validateContainerConfig(&cfg); err == nil {
			t.Errorf("container config %s: no error", name)
		}
	}
	if err := validateContainerConfig(&runtime.ContainerConfig{Name: "n", Image: "i", CPUQuota: 1000, LogPath: "/l"}); err != nil {
		t.Errorf("valid container config: %v", err)
	}
	for name, cfg := range map[string]runtime.SandboxConfig{
		"no uid":        {Name: "n", Namespace: "ns"},
		"no name":       {PodUID: "u", Namespace: "ns"},
		"long hostname": {PodUID: "u", Name: "n", Namespace: "ns", Hostname: strings.Repeat("h", 65)},
		"bad hostname":  {PodUID: "u", Name: "n", Namespace: "ns", Hostname: "a/b"},
		"bad port":      {PodUID: "u", Name: "n", Namespace: "ns", PortMappings: []runtime.PortMapping{{HostPort: 80}}},
	} {
		if err := validateSandboxConfig(&cfg); err == nil {
			t.Errorf("sandbox config %s: no error", name)
		}
	}
	for _, id := range []string{"", ".", "..", "../x", "a/b", "-x", strings.Repeat("a", 77)} {
		if validID(id) {
			t.Errorf("validID(%q) = true", id)
		}
	}
	if !validID(newID()) {
		t.Error("newID is not a valid ID")
	}
}

func TestContainerSpecOpts(t *testing.T) {
	t.Parallel()
	uid, gid := int64(1000), int64(3000)
	cfg := runtime.ContainerConfig{
		Name: "app", Image: "busybox",
		Env:              []runtime.KeyValue{{Key: "A", Value: "1"}},
		WorkingDir:       "/work",
		Mounts:           []runtime.Mount{{HostPath: "/data", ContainerPath: "/data", ReadOnly: true}, {HostPath: "/my/hosts", ContainerPath: "/etc/hosts"}},
		CPUShares:        256,
		CPUQuota:         20000,
		MemoryLimitBytes: 1 << 30,
		RunAsUser:        &uid,
		RunAsGroup:       &gid,
	}
	sb := &sandboxRecord{ID: "sb", Hostname: "pod-host", NetNSPath: "/run/kb/netns/sb"}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c1"}, containerSpecOpts(&cfg, sb, "/rt/sandboxes/sb", 0)...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "pod-host" || s.Process.Cwd != "/work" || s.Process.User.UID != 1000 || s.Process.User.GID != 3000 {
		t.Errorf("hostname %q cwd %q user %+v", s.Hostname, s.Process.Cwd, s.Process.User)
	}
	if !contains(s.Process.Env, "A=1") {
		t.Errorf("env %v", s.Process.Env)
	}
	nsPaths := map[specs.LinuxNamespaceType]string{}
	var nsTypes []string
	for _, ns := range s.Linux.Namespaces {
		nsPaths[ns.Type] = ns.Path
		nsTypes = append(nsTypes, string(ns.Type))
	}
	sort.Strings(nsTypes)
	if nsPaths[specs.NetworkNamespace] != "/run/kb/netns/sb" || strings.Join(nsTypes, ",") != "ipc,mount,network,pid,uts" {
		t.Errorf("namespaces %+v", s.Linux.Namespaces)
	}
	r := s.Linux.Resources
	if *r.CPU.Shares != 256 || *r.CPU.Quota != 20000 || *r.CPU.Period != defaultCPUPeriod || *r.Memory.Limit != 1<<30 {
		t.Errorf("resources cpu %+v memory %+v", r.CPU, r.Memory)
	}
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
	}
	if m := mounts["/data"]; m.Source != "/data" || !contains(m.Options, "ro") || !contains(m.Options, "rbind") {
		t.Errorf("/data mount %+v", m)
	}
	if m := mounts["/etc/hosts"]; m.Source != "/my/hosts" {
		t.Errorf("the config's /etc/hosts should win: %+v", m)
	}
	if m := mounts["/etc/hostname"]; m.Source != "/rt/sandboxes/sb/hostname" {
		t.Errorf("/etc/hostname mount %+v", m)
	}
	if m := mounts["/etc/resolv.conf"]; m.Source != "/rt/sandboxes/sb/resolv.conf" {
		t.Errorf("/etc/resolv.conf mount %+v", m)
	}

	// Host network: the node's network and UTS namespaces.
	h, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c2"},
		containerSpecOpts(&runtime.ContainerConfig{Name: "a", Image: "i"}, &sandboxRecord{ID: "sb", HostNetwork: true}, "/x", 0)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range h.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace || ns.Type == specs.UTSNamespace {
			t.Errorf("host-network container has its own %s namespace", ns.Type)
		}
	}
	if h.Linux.Resources.Memory != nil && h.Linux.Resources.Memory.Limit != nil {
		t.Errorf("memory limit without one asked: %d", *h.Linux.Resources.Memory.Limit)
	}

	// Host network in a node network namespace (Config.HostNetNS): that
	// namespace, and the host's UTS namespace.
	n, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c3"},
		containerSpecOpts(&runtime.ContainerConfig{Name: "a", Image: "i"}, &sandboxRecord{ID: "sb", HostNetwork: true, NetNSPath: "/run/netns/kb-node"}, "/x", 0)...)
	if err != nil {
		t.Fatal(err)
	}
	nsPaths = map[specs.LinuxNamespaceType]string{}
	for _, ns := range n.Linux.Namespaces {
		nsPaths[ns.Type] = ns.Path
	}
	if p, ok := nsPaths[specs.NetworkNamespace]; !ok || p != "/run/netns/kb-node" {
		t.Errorf("host-network container in a node namespace: network namespace %q (present %v)", p, ok)
	}
	if _, ok := nsPaths[specs.UTSNamespace]; ok {
		t.Error("host-network container in a node namespace has its own UTS namespace")
	}
}

func TestNewConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cfg  Config
		want error
	}{
		"no address":             {cfg: Config{Dir: dir}},
		"no dir":                 {cfg: Config{Address: "/x.sock"}},
		"relative dir":           {cfg: Config{Address: "/x.sock", Dir: "rt"}},
		"bad namespace":          {cfg: Config{Address: "/x.sock", Dir: dir, Namespace: "a b"}},
		"relative host netns":    {cfg: Config{Address: "/x.sock", Dir: dir, HostNetNS: "run/netns/x"}},
		"host netns not a netns": {cfg: Config{Address: "/x.sock", Dir: dir, HostNetNS: plain}, want: cni.ErrNotNetNS},
		"missing host netns":     {cfg: Config{Address: "/x.sock", Dir: dir, HostNetNS: filepath.Join(dir, "none")}, want: cni.ErrNotNetNS},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(context.Background(), tc.cfg)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("New: %v, want an error (%v)", err, tc.want)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestKeyedMutex(t *testing.T) {
	t.Parallel()
	var k keyedMutex
	unlock := k.lock("a")
	if _, ok := k.tryLock("a"); ok {
		t.Fatal("tryLock took a held key")
	}
	u2, ok := k.tryLock("b")
	if !ok {
		t.Fatal("tryLock failed on a free key")
	}
	u2()
	got := make(chan struct{})
	go func() {
		u := k.lock("a")
		close(got)
		u()
	}()
	select {
	case <-got:
		t.Fatal("lock taken while held")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	<-got
	if u, ok := k.tryLock("a"); !ok {
		t.Fatal("tryLock failed after release")
	} else {
		u()
	}
	if len(k.m) != 0 {
		t.Errorf("entries left: %v", k.m)
	}
}

func TestUnrecorded(t *testing.T) {
	t.Parallel()
	started := map[string]string{labelStartedAt: "2026-01-02T03:04:05Z"}
	exited := map[string]string{labelStartedAt: "2026-01-02T03:04:05Z", labelExitCode: "0"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		task   taskState
		want   bool
	}{
		{"never started", nil, taskState{}, false},
		{"started, no task, no exit", started, taskState{}, true},
		{"started, task running", started, taskState{exists: true, status: client.Running}, false},
		{"started, task stopped", started, taskState{exists: true, status: client.Stopped}, false},
		{"started, task being made", started, taskState{starting: true}, false},
		{"exit recorded", exited, taskState{}, false},
	} {
		if got := unrecorded(tc.labels, tc.task); got != tc.want {
			t.Errorf("%s: unrecorded = %v, want %v", tc.name, got, tc.want)
		}
	}
}
