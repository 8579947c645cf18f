package simulate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFinish(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow-1"}}
	pod := func(policy corev1.RestartPolicy, ann map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job-1", UID: "uid-1", Annotations: ann},
			Spec: corev1.PodSpec{NodeName: "hollow-1", RestartPolicy: policy, Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}
		p.Status = RunningStatus(p, node, t0)
		return p
	}
	fin := Finish{Runtime: 5 * time.Second}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		fin      Finish
		at       time.Duration
		act      Action
		phase    corev1.PodPhase
		exit     int32
		restarts int32
		wait     time.Duration
	}{
		{"a Never pod runs until its runtime", pod(corev1.RestartPolicyNever, nil), fin, 2 * time.Second, None, "", 0, 0, 3 * time.Second},
		{"then succeeds", pod(corev1.RestartPolicyNever, nil), fin, 5 * time.Second, UpdateStatus, corev1.PodSucceeded, 0, 0, 0},
		{"or fails with the exit code", pod(corev1.RestartPolicyNever, nil), Finish{Runtime: time.Second, ExitCode: 3}, time.Minute, UpdateStatus, corev1.PodFailed, 3, 0, 0},
		{"an OnFailure pod that fails restarts in place", pod(corev1.RestartPolicyOnFailure, nil), Finish{ExitCode: 1}, time.Second, UpdateStatus, corev1.PodRunning, 0, 1, 0},
		{"an OnFailure pod that succeeds finishes", pod(corev1.RestartPolicyOnFailure, nil), fin, time.Minute, UpdateStatus, corev1.PodSucceeded, 0, 0, 0},
		{"an Always pod runs forever", pod(corev1.RestartPolicyAlways, nil), fin, time.Hour, None, "", 0, 0, 0},
		{"a negative runtime runs forever", pod(corev1.RestartPolicyNever, nil), Finish{Runtime: -1}, time.Hour, None, "", 0, 0, 0},
		{"annotations override runtime and exit code", pod(corev1.RestartPolicyNever, map[string]string{RuntimeAnnotation: "1m", ExitCodeAnnotation: "7"}),
			fin, time.Minute, UpdateStatus, corev1.PodFailed, 7, 0, 0},
		{"an annotated runtime delays", pod(corev1.RestartPolicyNever, map[string]string{RuntimeAnnotation: "1m"}), fin, 10 * time.Second, None, "", 0, 0, 50 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			act, st, wait := Plan(tc.pod, node, t0.Add(tc.at), tc.fin)
			if act != tc.act || wait != tc.wait {
				t.Fatalf("Plan = %v wait %v, want %v wait %v", act, wait, tc.act, tc.wait)
			}
			if act != UpdateStatus {
				return
			}
			if st.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", st.Phase, tc.phase)
			}
			c := st.ContainerStatuses[0]
			if c.RestartCount != tc.restarts {
				t.Errorf("restarts %d, want %d", c.RestartCount, tc.restarts)
			}
			if tc.phase == corev1.PodRunning {
				if c.State.Running == nil || c.LastTerminationState.Terminated == nil {
					t.Errorf("a restarted container: %+v", c)
				}
				return
			}
			if c.State.Terminated == nil || c.State.Terminated.ExitCode != tc.exit || c.Ready {
				t.Errorf("container %+v, want terminated with %d", c, tc.exit)
			}
		})
	}
}
