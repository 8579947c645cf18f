package pods

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
)

// hashedContainer holds the fields of a container that shape the runtime
// container. Probes, lifecycle hooks, ports, resources (resized in place
// upstream) and the pull policy are left out: changing them must not
// replace a running container. Field names are fixed by their JSON tags,
// so adding a field here changes every hash and restarts every container
// on upgrade: add only with omitempty.
type hashedContainer struct {
	Name            string                         `json:"name"`
	Image           string                         `json:"image"`
	Command         []string                       `json:"command,omitempty"`
	Args            []string                       `json:"args,omitempty"`
	WorkingDir      string                         `json:"workingDir,omitempty"`
	Env             []corev1.EnvVar                `json:"env,omitempty"`
	EnvFrom         []corev1.EnvFromSource         `json:"envFrom,omitempty"`
	VolumeMounts    []corev1.VolumeMount           `json:"volumeMounts,omitempty"`
	SecurityContext *corev1.SecurityContext        `json:"securityContext,omitempty"`
	TTY             bool                           `json:"tty,omitempty"`
	Stdin           bool                           `json:"stdin,omitempty"`
	StdinOnce       bool                           `json:"stdinOnce,omitempty"`
	RestartPolicy   *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
}

// ContainerHash returns a stable hash (16 hex digits) of the fields of c
// that shape its runtime container. The kubelet stores it in the
// runtime.LabelHash label; a running container whose label differs from
// the hash of its spec is replaced.
func ContainerHash(c *corev1.Container) string {
	h := hashedContainer{
		Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir,
		Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts, SecurityContext: c.SecurityContext,
		TTY: c.TTY, Stdin: c.Stdin, StdinOnce: c.StdinOnce, RestartPolicy: c.RestartPolicy,
	}
	// Marshalling these types cannot fail: no channels, funcs or NaNs.
	b, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("pods: hashing container %q: %v", c.Name, err))
	}
	f := fnv.New64a()
	f.Write(b)
	return fmt.Sprintf("%016x", f.Sum64())
}
