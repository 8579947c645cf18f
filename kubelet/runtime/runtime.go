// Package runtime defines what the kubelet needs from a container runtime:
// pod sandboxes (a network namespace with the pod's network set up), the
// containers in them, and images. It holds only types; the containerd
// implementation lives in runtime/containerd, and the kubelet's pod logic
// consumes the interface it declares itself from these types.
//
// The shapes follow the CRI (k8s.io/cri-api) in spirit but are smaller: the
// kubelet and the runtime are in one process, so there is no gRPC between
// them.
package runtime

import (
	"time"
)

// Labels the runtime stores on every sandbox and container so that a
// restarted kubelet can tell which pod and container they belong to.
const (
	LabelPodUID       = "io.kubernetes.pod.uid"
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelContainer    = "io.kubernetes.container.name"
	// LabelAttempt is the container's restart count when it was created.
	LabelAttempt = "io.kubebus.container.attempt"
	// LabelSandbox is the ID of the sandbox a container runs in.
	LabelSandbox = "io.kubebus.sandbox.id"
	// LabelHash is the hash of the container's spec the kubelet created it
	// from; a changed hash means the container must be replaced.
	LabelHash = "io.kubebus.container.hash"
	// LabelInit marks init containers ("true").
	LabelInit = "io.kubebus.container.init"
)

// SandboxState is the state of a pod sandbox.
type SandboxState string

// Sandbox states.
const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady" // stopped: network torn down
)

// SandboxConfig asks for a pod sandbox.
type SandboxConfig struct {
	PodUID, Name, Namespace string
	Hostname                string
	// HostNetwork runs the pod in the node's network namespace (no CNI).
	HostNetwork bool
	// HostIPC and HostPID run the pod in the node's IPC and PID namespaces;
	// otherwise the sandbox holds an IPC namespace its containers share.
	HostIPC, HostPID bool
	// ShareProcessNamespace gives the pod one PID namespace, the sandbox's,
	// that all its containers join; otherwise each container has its own.
	ShareProcessNamespace bool
	// PortMappings are the pod's hostPorts, set up through the portmap plugin.
	PortMappings []PortMapping
	Labels       map[string]string
	// ResolvConf, when not nil, is the pod's /etc/resolv.conf, which the
	// kubelet computes from the pod's dnsPolicy and dnsConfig; nil gives
	// the pod the node's.
	ResolvConf []byte
}

// PortMapping maps a port of the node to a port of the pod.
type PortMapping struct {
	Protocol      string // TCP, UDP or SCTP
	ContainerPort int32
	HostPort      int32
	HostIP        string
}

// Sandbox is a pod sandbox as the runtime reports it.
type Sandbox struct {
	ID                      string
	PodUID, Name, Namespace string
	State                   SandboxState
	// IP is the pod's IP (the node's for host-network pods).
	IP string
	// NetNSPath is the network namespace containers join: the sandbox's own,
	// or for host-network pods the node's ("" when that is the kubelet's).
	NetNSPath string
	CreatedAt time.Time
	Labels    map[string]string
}

// ContainerConfig asks for a container in a sandbox.
type ContainerConfig struct {
	Name       string
	Attempt    int    // restart count
	Image      string // a reference the runtime knows (already pulled or imported)
	Command    []string
	Args       []string
	Env        []KeyValue // already resolved (valueFrom done by the kubelet)
	WorkingDir string
	Mounts     []Mount
	// Resources become cgroup limits.
	CPUShares        int64 // from requests.cpu (0: runtime default)
	CPUQuota         int64 // microseconds per CPUPeriod, from limits.cpu (0: none)
	CPUPeriod        int64
	MemoryLimitBytes int64 // from limits.memory (0: none)
	// LogPath is the file that receives the container's stdout and stderr.
	LogPath string
	Labels  map[string]string
	TTY     bool
	Stdin   bool
	// Privileged, RunAsUser and RunAsGroup from the securityContext.
	Privileged bool
	RunAsUser  *int64
	RunAsGroup *int64
}

// KeyValue is one environment variable.
type KeyValue struct{ Key, Value string }

// Mount binds a host path into a container.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
}

// ContainerState is the state of a container.
type ContainerState string

// Container states.
const (
	ContainerCreated ContainerState = "Created"
	ContainerRunning ContainerState = "Running"
	ContainerExited  ContainerState = "Exited"
	ContainerUnknown ContainerState = "Unknown"
)

// Container is a container as the runtime reports it.
type Container struct {
	ID, SandboxID string
	Name          string
	Attempt       int
	Image         string
	ImageID       string
	State         ContainerState
	CreatedAt     time.Time
	StartedAt     time.Time // zero until started
	FinishedAt    time.Time // zero until exited
	ExitCode      int32
	// Reason for an exit: "Completed", "Error" or "OOMKilled".
	Reason  string
	LogPath string
	Labels  map[string]string
}

// Image is an image the runtime holds.
type Image struct {
	ID         string   // digest of the image config or manifest
	RepoTags   []string // references, e.g. docker.io/library/busybox:latest
	Size       int64
	LastUsedAt time.Time
}

// FsInfo reports the filesystem holding images.
type FsInfo struct {
	Path                  string
	CapacityBytes, Used   uint64
	AvailableBytes        uint64
	InodesFree, InodesCap uint64
}

// ExecResult is what an exec in a container produced.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}
