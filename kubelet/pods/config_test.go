package pods

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x-$(A)-$(B)-y", "x-alpha-beta-y"},
		{"$(EMPTY)|", "|"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$($(A))", "$($(A))"},
		{"100$ and $(B)", "100$ and beta"},
	}
	for _, tc := range tests {
		if got := Expand(tc.in, mapLookup(vars)); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestContainerHash(t *testing.T) {
	t.Parallel()
	base := corev1.Container{Name: "app", Image: "busybox", Command: []string{"sh"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}
	h := ContainerHash(&base)
	if len(h) != 16 {
		t.Fatalf("hash %q is not 16 hex digits", h)
	}
	// Fields that do not shape the runtime container leave the hash alone.
	same := base
	same.ReadinessProbe = &corev1.Probe{PeriodSeconds: 3}
	same.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	same.ImagePullPolicy = corev1.PullAlways
	same.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	if got := ContainerHash(&same); got != h {
		t.Errorf("probe/resources/pull policy/ports changed the hash: %s != %s", got, h)
	}
	for name, mod := range map[string]func(c *corev1.Container){
		"image":   func(c *corev1.Container) { c.Image = "busybox:2" },
		"command": func(c *corev1.Container) { c.Command = []string{"bash"} },
		"args":    func(c *corev1.Container) { c.Args = []string{"-c"} },
		"env":     func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "A", Value: "2"}} },
		"mounts":  func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}} },
		"workdir": func(c *corev1.Container) { c.WorkingDir = "/tmp" },
		"security": func(c *corev1.Container) {
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr[int64](1000)}
		},
	} {
		c := base
		mod(&c)
		if ContainerHash(&c) == h {
			t.Errorf("changing %s kept the hash", name)
		}
	}
	// The hash is FNV-64a of {"name":"app","image":"busybox"}. It is stored
	// on containers: it must not change between
	// kubelet versions, or an upgrade restarts every container.
	if got, want := ContainerHash(&corev1.Container{Name: "app", Image: "busybox"}), "0b72be2a791a4282"; got != want {
		t.Errorf("hash of a fixed container = %s, want %s (did the hashed fields change?)", got, want)
	}
}

func TestCPUConversions(t *testing.T) {
	t.Parallel()
	shares := []struct{ milli, want int64 }{{0, 2}, {1, 2}, {2, 2}, {10, 10}, {100, 102}, {250, 256}, {1000, 1024}, {4000, 4096}, {1 << 40, 262144}}
	for _, s := range shares {
		if got := MilliCPUToShares(s.milli); got != s.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", s.milli, got, s.want)
		}
	}
	quotas := []struct{ milli, want int64 }{{0, 0}, {1, 1000}, {5, 1000}, {10, 1000}, {250, 25000}, {500, 50000}, {1000, 100000}, {2500, 250000}}
	for _, q := range quotas {
		if got := MilliCPUToQuota(q.milli); got != q.want {
			t.Errorf("MilliCPUToQuota(%d) = %d, want %d", q.milli, got, q.want)
		}
	}
}

func TestBuildContainerConfig(t *testing.T) {
	t.Parallel()
	pod := withInit(testPod("app"), "setup")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr[int64](1000), RunAsGroup: ptr[int64](2000)}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c", "echo $(GREETING) $$(GREETING) $(NOPE)"}
	c.Args = []string{"--name=$(POD)"}
	c.WorkingDir = "/work"
	c.TTY = true
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr[int64](0), Privileged: ptr(true)}
	env := []runtime.KeyValue{{Key: "GREETING", Value: "hi"}, {Key: "POD", Value: "web"}}
	mounts := []runtime.Mount{{HostPath: "/h", ContainerPath: "/c", ReadOnly: true}}
	cfg, err := BuildContainerConfig(ContainerInput{Pod: pod, Container: c, Attempt: 3, Env: env, Mounts: mounts, LogPath: "/var/log/pods/x/app/3.log", SandboxID: "sb1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/sh", "-c", "echo hi $(GREETING) $(NOPE)"}; !slices.Equal(cfg.Command, want) {
		t.Errorf("command = %q, want %q", cfg.Command, want)
	}
	if want := []string{"--name=web"}; !slices.Equal(cfg.Args, want) {
		t.Errorf("args = %q, want %q", cfg.Args, want)
	}
	if cfg.CPUShares != 256 || cfg.CPUQuota != 150000 || cfg.CPUPeriod != 100000 || cfg.MemoryLimitBytes != 64<<20 {
		t.Errorf("resources = shares %d quota %d period %d mem %d", cfg.CPUShares, cfg.CPUQuota, cfg.CPUPeriod, cfg.MemoryLimitBytes)
	}
	if cfg.RunAsUser == nil || *cfg.RunAsUser != 0 || cfg.RunAsGroup == nil || *cfg.RunAsGroup != 2000 || !cfg.Privileged {
		t.Errorf("security: user %v group %v privileged %v", cfg.RunAsUser, cfg.RunAsGroup, cfg.Privileged)
	}
	if cfg.Name != "app" || cfg.Attempt != 3 || cfg.Image != "busybox" || cfg.WorkingDir != "/work" || !cfg.TTY || cfg.Stdin ||
		cfg.LogPath != "/var/log/pods/x/app/3.log" || !slices.Equal(cfg.Mounts, mounts) || !slices.Equal(cfg.Env, env) {
		t.Errorf("config = %+v", cfg)
	}
	wantLabels := map[string]string{
		runtime.LabelPodUID: "uid-1", runtime.LabelPodName: "web", runtime.LabelPodNamespace: "ns", runtime.LabelContainer: "app",
		runtime.LabelAttempt: "3", runtime.LabelHash: ContainerHash(c), runtime.LabelSandbox: "sb1",
	}
	if len(cfg.Labels) != len(wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if cfg.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
		}
	}

	// An init container is labelled; no resources means the minimum shares
	// and no quota or memory limit.
	initCfg, err := BuildContainerConfig(ContainerInput{Pod: pod, Container: &pod.Spec.InitContainers[0]})
	if err != nil {
		t.Fatal(err)
	}
	if initCfg.Labels[runtime.LabelInit] != "true" || initCfg.CPUShares != 2 || initCfg.CPUQuota != 0 || initCfg.CPUPeriod != 0 || initCfg.MemoryLimitBytes != 0 {
		t.Errorf("init config = %+v", initCfg)
	}
	if *initCfg.RunAsUser != 1000 || initCfg.Privileged || initCfg.Command != nil {
		t.Errorf("init config security/command = %v %v %v", *initCfg.RunAsUser, initCfg.Privileged, initCfg.Command)
	}
}

func TestBuildContainerConfigErrors(t *testing.T) {
	t.Parallel()
	pod := testPod("app")
	for name, in := range map[string]ContainerInput{
		"no pod":           {Container: &pod.Spec.Containers[0]},
		"no container":     {Pod: pod},
		"no image":         {Pod: pod, Container: &corev1.Container{Name: "x"}},
		"no name":          {Pod: pod, Container: &corev1.Container{Image: "x"}},
		"negative attempt": {Pod: pod, Container: &pod.Spec.Containers[0], Attempt: -1},
	} {
		if _, err := BuildContainerConfig(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLogPath(t *testing.T) {
	t.Parallel()
	got := LogPath("/var/log/pods", testPod("app"), "app", 2)
	if want := "/var/log/pods/ns_web_uid-1/app/2.log"; got != want {
		t.Fatalf("LogPath = %q, want %q", got, want)
	}
	if !strings.HasPrefix(got, PodLogDir("/var/log/pods", testPod())) {
		t.Fatalf("log path %q not under the pod log dir", got)
	}
}
