package kubernetes

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/job"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func pod(age time.Duration, phase corev1.PodPhase, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "job", Image: "img:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if mutate != nil {
		mutate(&p)
	}
	return p
}

func waiting(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}

func TestJudgePod(t *testing.T) {
	g := graces{unschedulable: time.Minute, pull: 2 * time.Minute}
	cases := []struct {
		name  string
		pod   corev1.Pod
		state job.State
		stuck bool
		want  string // substring of the reason
	}{
		{"pending", pod(time.Second, corev1.PodPending, nil), job.Pending, false, ""},
		{"running", pod(time.Second, corev1.PodRunning, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), job.Running, false, ""},
		{"succeeded", pod(time.Second, corev1.PodSucceeded, nil), job.Succeeded, false, ""},
		{"image not found fails at once", pod(5*time.Second, corev1.PodPending, waiting("ErrImagePull", `failed to resolve reference "r/x:1": r/x:1: not found`)), job.Failed, true, "ErrImagePull"},
		{"transient pull error waits", pod(5*time.Second, corev1.PodPending, waiting("ImagePullBackOff", "dial tcp: i/o timeout")), job.Pending, false, ""},
		{"transient pull error past grace", pod(3*time.Minute, corev1.PodPending, waiting("ImagePullBackOff", "dial tcp: i/o timeout")), job.Failed, true, "cannot pull image img:1"},
		{"invalid image name", pod(time.Second, corev1.PodPending, waiting("InvalidImageName", "bad")), job.Failed, true, "InvalidImageName"},
		{"unschedulable within grace", pod(10*time.Second, corev1.PodPending, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient nvidia.com/gpu", LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Second))}}
		}), job.Pending, false, "Unschedulable"},
		{"unschedulable past grace", pod(2*time.Minute, corev1.PodPending, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient nvidia.com/gpu", LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Minute))}}
		}), job.Failed, true, "Insufficient nvidia.com/gpu"},
		{"oom", pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
		}), job.Failed, false, "OOMKilled: container job used more than its memory limit of 64Mi"},
		{"exit code", pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}}}}
		}), job.Failed, false, "exited with code 3"},
		{"preempted spot", pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"cloud.google.com/gke-spot": "true"}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: "node shutdown"}}
		}), job.Failed, false, "preempted"},
		{"evicted", pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
		}), job.Failed, false, "evicted: The node was low"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judgePod(&c.pod, now, g)
			if v.state != c.state || v.stuck != c.stuck || !strings.Contains(v.reason, c.want) {
				t.Errorf("got %s stuck=%v %q; want %s stuck=%v containing %q", v.state, v.stuck, v.reason, c.state, c.stuck, c.want)
			}
		})
	}
}

func TestJudgeIndex(t *testing.T) {
	failed := "3,5-7"
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "grp"}, Status: batchv1.JobStatus{CompletedIndexes: "0-2,4", FailedIndexes: &failed}}
	p5 := pod(time.Minute, corev1.PodFailed, func(p *corev1.Pod) {
		p.Labels = map[string]string{batchv1.JobCompletionIndexAnnotation: "5"}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
	})
	pods := []corev1.Pod{p5}
	g := graces{unschedulable: time.Minute, pull: time.Minute}
	for i, want := range map[int]job.State{0: job.Succeeded, 2: job.Succeeded, 4: job.Succeeded, 3: job.Failed, 5: job.Failed, 7: job.Failed, 8: job.Pending} {
		if v := judgeIndex(j, i, pods, now, g); v.state != want {
			t.Errorf("index %d: %s, want %s", i, v.state, want)
		}
	}
	if v := judgeIndex(j, 5, pods, now, g); !strings.Contains(v.reason, "OOMKilled") {
		t.Errorf("index 5 reason %q", v.reason)
	}
}

func TestJudgeJob(t *testing.T) {
	g := graces{unschedulable: time.Minute, pull: time.Minute}
	done := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	if v := judgeJob(done, nil, now, g); v.state != job.Succeeded {
		t.Errorf("complete: %s", v.state)
	}
	dl := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}}}
	if v := judgeJob(dl, nil, now, g); v.state != job.Failed || !strings.Contains(v.reason, "DeadlineExceeded") {
		t.Errorf("deadline: %s %q", v.state, v.reason)
	}
}

func FuzzIndexIn(f *testing.F) {
	for _, s := range []string{"", "1", "1,3-5", "0-2,4,9-", "-", "a-b", "5-3"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, set string, i int) {
		indexIn(set, i) // must not panic
	})
}
