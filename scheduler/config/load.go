package config

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ErrUnsupportedVersion is returned for an apiVersion other than v1.
var ErrUnsupportedVersion = errors.New("config: unsupported apiVersion")

// Load decodes a configuration from YAML or JSON (unknown fields are
// errors), applies the defaults and validates it, including every
// plugin's arguments.
func Load(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("config: decoding: %w", err)
	}
	if c.APIVersion != APIVersion {
		return nil, fmt.Errorf("%w %q (want %s)", ErrUnsupportedVersion, c.APIVersion, APIVersion)
	}
	if c.Kind != Kind {
		return nil, fmt.Errorf("config: kind %q is not %s", c.Kind, Kind)
	}
	c.Default()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Default returns the default configuration (what an empty file gives).
func Default() *Configuration {
	c := &Configuration{APIVersion: APIVersion, Kind: Kind}
	c.Default()
	return c
}

// Default fills in upstream's defaults.
func (c *Configuration) Default() {
	if c.Parallelism == nil {
		c.Parallelism = ptr[int32](16)
	}
	if c.PercentageOfNodesToScore == nil {
		c.PercentageOfNodesToScore = ptr[int32](0)
	}
	if c.PodInitialBackoffSeconds == nil {
		c.PodInitialBackoffSeconds = ptr[int64](1)
	}
	if c.PodMaxBackoffSeconds == nil {
		c.PodMaxBackoffSeconds = ptr[int64](10)
	}
	le := &c.LeaderElection
	if le.LeaderElect == nil {
		le.LeaderElect = ptr(true)
	}
	defaultDuration(&le.LeaseDuration, 15*time.Second)
	defaultDuration(&le.RenewDeadline, 10*time.Second)
	defaultDuration(&le.RetryPeriod, 2*time.Second)
	defaultString(&le.ResourceLock, "leases")
	defaultString(&le.ResourceName, "kube-scheduler")
	defaultString(&le.ResourceNamespace, "kube-system")
	cc := &c.ClientConnection
	defaultString(&cc.ContentType, "application/vnd.kubernetes.protobuf")
	if cc.QPS == 0 {
		cc.QPS = 50
	}
	if cc.Burst == 0 {
		cc.Burst = 100
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{}}
	}
	if len(c.Profiles) == 1 && c.Profiles[0].SchedulerName == nil {
		c.Profiles[0].SchedulerName = ptr(DefaultSchedulerName)
	}
}

// Validate checks a defaulted configuration and returns every problem
// found, one sentence each, naming the field.
func (c *Configuration) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if *c.Parallelism <= 0 {
		bad("parallelism: %d must be greater than zero", *c.Parallelism)
	}
	if p := *c.PercentageOfNodesToScore; p < 0 || p > 100 {
		bad("percentageOfNodesToScore: %d is not in [0, 100]", p)
	}
	if *c.PodInitialBackoffSeconds <= 0 {
		bad("podInitialBackoffSeconds: %d must be greater than zero", *c.PodInitialBackoffSeconds)
	}
	if *c.PodMaxBackoffSeconds < *c.PodInitialBackoffSeconds {
		bad("podMaxBackoffSeconds: %d must not be less than podInitialBackoffSeconds (%d)", *c.PodMaxBackoffSeconds, *c.PodInitialBackoffSeconds)
	}
	if len(c.Extenders) > 0 {
		bad("extenders: scheduler extenders are not supported")
	}
	if le := c.LeaderElection; *le.LeaderElect {
		if le.LeaseDuration.Duration <= 0 || le.RenewDeadline.Duration <= 0 || le.RetryPeriod.Duration <= 0 {
			bad("leaderElection: leaseDuration, renewDeadline and retryPeriod must be greater than zero")
		}
		if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
			bad("leaderElection.leaseDuration: %v must be greater than renewDeadline (%v)", le.LeaseDuration.Duration, le.RenewDeadline.Duration)
		}
		if le.ResourceLock != "leases" {
			bad("leaderElection.resourceLock: %q is not supported (only leases)", le.ResourceLock)
		}
	}
	if c.ClientConnection.QPS < 0 || c.ClientConnection.Burst < 0 {
		bad("clientConnection: qps and burst must not be negative")
	}
	seen := map[string]int{}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		path := fmt.Sprintf("profiles[%d]", i)
		if p.SchedulerName == nil || *p.SchedulerName == "" {
			bad("%s.schedulerName: required when there is more than one profile", path)
		} else if j, dup := seen[*p.SchedulerName]; dup {
			bad("%s.schedulerName: %q is already used by profiles[%d]", path, *p.SchedulerName, j)
		} else {
			seen[*p.SchedulerName] = i
		}
		if v := p.PercentageOfNodesToScore; v != nil && (*v < 0 || *v > 100) {
			bad("%s.percentageOfNodesToScore: %d is not in [0, 100]", path, *v)
		}
		if _, err := c.buildProfile(i); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: invalid: %w", errors.Join(errs...))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func defaultDuration(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}
