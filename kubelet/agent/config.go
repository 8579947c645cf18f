package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Runtime is what the kubelet needs of its container runtime.
type Runtime interface {
	RunPodSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Sandbox, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	ListPodSandboxes(ctx context.Context) ([]runtime.Sandbox, error)
	CreateContainer(ctx context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	ListContainers(ctx context.Context) ([]runtime.Container, error)
	ContainerStatus(ctx context.Context, id string) (runtime.Container, error)
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error)
	PullImage(ctx context.Context, ref string) (runtime.Image, error)
	ImageStatus(ctx context.Context, ref string) (*runtime.Image, error)
	ListImages(ctx context.Context) ([]runtime.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ImageFsInfo(ctx context.Context) (runtime.FsInfo, error)
}

// Config configures a Kubelet.
type Config struct {
	// NodeName is the node this kubelet runs pods for.
	NodeName string
	// Client writes pod status, mirror pods and events and reads the
	// ConfigMaps and Secrets pods use.
	Client kubernetes.Interface
	// JetStream delivers the node's pods (KUBE_NODEPODS).
	JetStream jetstream.JetStream
	// Instance is appended to the pod consumer's durable name.
	Instance string
	// Runtime runs the containers.
	Runtime Runtime
	// RootDir holds pod volumes (RootDir/pods) and container logs
	// (RootDir/logs unless LogDir is set).
	RootDir string
	LogDir  string
	// ManifestDir holds static pod manifests ("" for none).
	ManifestDir string
	// HostIPs are the node's addresses, reported as the pods' hostIPs.
	HostIPs []string
	// ClusterDNS are the cluster DNS's addresses and ClusterDomain the
	// cluster's domain (cluster.local when empty), written into the
	// resolv.conf of pods with dnsPolicy ClusterFirst; ResolvConf is the
	// node's resolv.conf, which Default pods get (/etc/resolv.conf when
	// empty).
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string
	// Allocatable stands in for limits a container does not set in the
	// downward API.
	Allocatable corev1.ResourceList
	// RelistPeriod is how often the runtime is relisted (default 1s).
	RelistPeriod time.Duration
	// ImageGCHighThreshold and ImageGCLowThreshold are the disk use
	// percentages above which images are removed, least recently used
	// first, until use is below the low one (default 85 and 80).
	ImageGCHighThreshold, ImageGCLowThreshold int
	// ImageGCPeriod is how often disk use is checked (default 5m).
	ImageGCPeriod time.Duration
	// Workers sync pods in parallel (default 8).
	Workers int
	Clock   clock.WithTicker
	Logger  *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("kubelet: NodeName is required")
	case c.Client == nil || c.JetStream == nil || c.Runtime == nil:
		return errors.New("kubelet: Client, JetStream and Runtime are required")
	case c.RootDir == "" || !filepath.IsAbs(c.RootDir):
		return errors.New("kubelet: RootDir must be an absolute path")
	case c.ImageGCHighThreshold < 0 || c.ImageGCHighThreshold > 100 || c.ImageGCLowThreshold < 0 || c.ImageGCLowThreshold > 100:
		return errors.New("kubelet: image GC thresholds are percentages (0..100)")
	}
	if c.LogDir == "" {
		c.LogDir = filepath.Join(c.RootDir, "logs")
	}
	if c.RelistPeriod <= 0 {
		c.RelistPeriod = time.Second
	}
	if c.ImageGCHighThreshold == 0 {
		c.ImageGCHighThreshold = 85
	}
	if c.ImageGCLowThreshold == 0 {
		c.ImageGCLowThreshold = 80
	}
	if c.ImageGCLowThreshold > c.ImageGCHighThreshold {
		return errors.New("kubelet: the image GC low threshold is above the high one")
	}
	if c.ImageGCPeriod <= 0 {
		c.ImageGCPeriod = 5 * time.Minute
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
