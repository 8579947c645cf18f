package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// sandboxPod is a pod of two busybox containers sharing an emptyDir: each
// prints its IPC and PID namespaces (e.g. "ipc:[4026532210]"); a then writes
// "shm-from-a" to /dev/shm/a, runs `sleep 3217` and says so in the volume; b
// waits for that, prints what it reads in /dev/shm/a and then, every second,
// "seen" when its ps lists a's sleep and "not-seen" when not.
const sandboxPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  shareProcessNamespace: %t
  terminationGracePeriodSeconds: 1
  volumes:
  - name: shared
    emptyDir: {}
  containers:
  - name: a
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "busybox readlink /proc/self/ns/ipc; busybox readlink /proc/self/ns/pid; echo shm-from-a > /dev/shm/a; sleep 3217 & touch /shared/a-started; wait"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  - name: b
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "busybox readlink /proc/self/ns/ipc; busybox readlink /proc/self/ns/pid; until [ -e /shared/a-started ]; do sleep 0.2; done; cat /dev/shm/a; while true; do if ps -o args | grep -q '^sleep 3217'; then echo seen; else echo not-seen; fi; sleep 1; done"]
    volumeMounts: [{name: shared, mountPath: /shared}]
`

// TestIntegrationPodSandboxNamespaces: the containers of a pod share the
// pause container's IPC namespace; with shareProcessNamespace they share its
// PID namespace too and see each other's processes, without it they do not.
func TestIntegrationPodSandboxNamespaces(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	kubectl := harness.Kubectl(t)
	s.MustRun(t, kubectl, fmt.Sprintf(sandboxPod, "shared", true)+"---\n"+fmt.Sprintf(sandboxPod, "private", false), "apply", "-f", "-")

	logs := func(pod, container string) ([]string, error) {
		b, err := cs.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n"), nil
	}
	// namespaces returns the IPC and PID namespaces a container printed.
	namespaces := func(pod, container string) (ipc, pid string, err error) {
		l, err := logs(pod, container)
		if err != nil {
			return "", "", err
		}
		if len(l) < 2 || !strings.HasPrefix(l[0], "ipc:[") || !strings.HasPrefix(l[1], "pid:[") {
			return "", "", fmt.Errorf("%s/%s printed no namespaces yet: %q", pod, container, l)
		}
		return l[0], l[1], nil
	}
	count := func(lines []string, word string) int {
		n := 0
		for _, l := range lines {
			if l == word {
				n++
			}
		}
		return n
	}

	// sharedShm checks that b read what a wrote in /dev/shm.
	sharedShm := func(t *testing.T, pod string) {
		t.Helper()
		l, err := logs(pod, "b")
		if err != nil {
			t.Fatal(err)
		}
		if count(l, "shm-from-a") != 1 {
			t.Errorf("b of %s did not read a's /dev/shm/a: %q", pod, l)
		}
	}

	for _, name := range []string{"shared", "private"} {
		harness.Eventually(t, 90*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 2 {
				return fmt.Errorf("pod %s: phase %s, %d container statuses", name, p.Status.Phase, len(p.Status.ContainerStatuses))
			}
			return nil
		})
	}

	t.Run("shareProcessNamespace: one PID and IPC namespace", func(t *testing.T) {
		harness.Eventually(t, 30*time.Second, func() error {
			l, err := logs("shared", "b")
			if err != nil {
				return err
			}
			if count(l, "seen") == 0 {
				return fmt.Errorf("b never saw a's sleep in ps: %q", l)
			}
			return nil
		})
		ipcA, pidA, err := namespaces("shared", "a")
		if err != nil {
			t.Fatal(err)
		}
		ipcB, pidB, err := namespaces("shared", "b")
		if err != nil {
			t.Fatal(err)
		}
		if ipcA != ipcB || pidA != pidB {
			t.Errorf("a has %s %s, b has %s %s: want the same", ipcA, pidA, ipcB, pidB)
		}
		sharedShm(t, "shared")
	})

	t.Run("own PID namespaces, one IPC namespace", func(t *testing.T) {
		harness.Eventually(t, 30*time.Second, func() error {
			l, err := logs("private", "b")
			if err != nil {
				return err
			}
			if count(l, "not-seen") < 3 {
				return fmt.Errorf("b looked fewer than 3 times: %q", l)
			}
			return nil
		})
		l, err := logs("private", "b")
		if err != nil {
			t.Fatal(err)
		}
		if n := count(l, "seen"); n > 0 {
			t.Errorf("b saw a's sleep %d times without shareProcessNamespace", n)
		}
		ipcA, pidA, err := namespaces("private", "a")
		if err != nil {
			t.Fatal(err)
		}
		ipcB, pidB, err := namespaces("private", "b")
		if err != nil {
			t.Fatal(err)
		}
		if ipcA != ipcB {
			t.Errorf("IPC namespaces differ: a %s, b %s", ipcA, ipcB)
		}
		sharedShm(t, "private")
		if pidA == pidB {
			t.Errorf("a and b share the PID namespace %s without shareProcessNamespace", pidA)
		}
	})
}
