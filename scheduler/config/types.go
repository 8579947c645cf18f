// Package config loads a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) from YAML, applies upstream's defaults,
// validates it, and builds a framework.Profile per scheduler profile from
// the plugins kubebus implements.
//
// The caller's duties: read the file (Load takes bytes), call BuildProfiles once
// at start-up, and use the top-level fields (leader election, backoff,
// parallelism, client connection) in the I/O shell.
package config

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// APIVersion is the only configuration version accepted.
	APIVersion = "kubescheduler.config.k8s.io/v1"
	// Kind is the configuration kind.
	Kind = "KubeSchedulerConfiguration"
	// DefaultSchedulerName names the profile of a configuration with one
	// unnamed profile.
	DefaultSchedulerName = "default-scheduler"
)

// Configuration is a KubeSchedulerConfiguration. Pointer fields are
// optional; Default fills them in.
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// Parallelism bounds the goroutines a scheduling cycle uses (default 16).
	Parallelism *int32 `json:"parallelism,omitempty"`

	LeaderElection   LeaderElection   `json:"leaderElection"`
	ClientConnection ClientConnection `json:"clientConnection"`

	// Accepted for compatibility; kubebus serves health and metrics on its
	// own addresses.
	HealthzBindAddress        string `json:"healthzBindAddress,omitempty"`
	MetricsBindAddress        string `json:"metricsBindAddress,omitempty"`
	EnableProfiling           *bool  `json:"enableProfiling,omitempty"`
	EnableContentionProfiling *bool  `json:"enableContentionProfiling,omitempty"`
	DelayCacheUntilActive     bool   `json:"delayCacheUntilActive,omitempty"`

	// PercentageOfNodesToScore is the share of nodes to find feasible
	// before scoring (0-100; 0, the default, is upstream's adaptive rule).
	// A profile may override it.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`

	// PodInitialBackoffSeconds and PodMaxBackoffSeconds bound the queue's
	// backoff for pods that failed to schedule (defaults 1 and 10).
	PodInitialBackoffSeconds *int64 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64 `json:"podMaxBackoffSeconds,omitempty"`

	Profiles []Profile `json:"profiles,omitempty"`

	// Extenders are not supported; a configuration with any is invalid.
	Extenders []json.RawMessage `json:"extenders,omitempty"`
}

// LeaderElection configures the Lease-based election of the active
// replica.
type LeaderElection struct {
	LeaderElect       *bool           `json:"leaderElect,omitempty"`
	LeaseDuration     metav1.Duration `json:"leaseDuration"`
	RenewDeadline     metav1.Duration `json:"renewDeadline"`
	RetryPeriod       metav1.Duration `json:"retryPeriod"`
	ResourceLock      string          `json:"resourceLock"`
	ResourceName      string          `json:"resourceName"`
	ResourceNamespace string          `json:"resourceNamespace"`
}

// ClientConnection configures the client of the API server.
type ClientConnection struct {
	Kubeconfig         string  `json:"kubeconfig"`
	AcceptContentTypes string  `json:"acceptContentTypes"`
	ContentType        string  `json:"contentType"`
	QPS                float32 `json:"qps"`
	Burst              int32   `json:"burst"`
}

// Profile is one scheduler profile.
type Profile struct {
	SchedulerName            *string        `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins lists the plugins enabled and disabled at each extension point.
// MultiPoint enables a plugin at every point it implements.
type Plugins struct {
	PreEnqueue PluginSet `json:"preEnqueue,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
}

// PluginSet is the plugins enabled (in order) and disabled at a point.
// Disabling "*" disables every default plugin there.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin; Weight applies to Score plugins (0 means 1).
type Plugin struct {
	Name   string `json:"name"`
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig holds one plugin's arguments.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}
