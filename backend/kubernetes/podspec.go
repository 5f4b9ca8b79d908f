package kubernetes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Labels and annotations on every object the backend creates.
const (
	LabelName    = "app.kubernetes.io/name" // = "kinetic"
	LabelApp     = "app"                    // = "kinetic", as the API reference's list_jobs expects
	LabelJobID   = "kinetic.dev/job-id"
	LabelGroupID = "kinetic.dev/group-id"
	// AnnotationPrefix + a handle field's JSON name carries that field, so listing needs
	// no store reads.
	AnnotationPrefix = "kinetic.dev/"

	runnerVolume = "kinetic-runner"
	workVolume   = "kinetic-work"
	credsVolume  = "kinetic-store-credentials"
	runnerDir    = "/kinetic/runner"
	workDir      = "/kinetic/work"
	credsDir     = "/var/run/kinetic/store-credentials"
)

// jobFor is the Job that runs one job.
func (b *Backend) jobFor(h *job.Handle, fuse *fusePlan) (*batchv1.Job, error) {
	sp, err := acceleratorOf(h)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", h.JobID, err)
	}
	labels := baseLabels()
	labels[LabelJobID] = h.JobID
	args := []string{"runner", "--store", h.Store, "--job", h.JobID, "--workspace", workDir}
	key, warm := b.warmKey(h, sp, fuse)
	if warm {
		args = append(args, b.warmArgs(key)...)
	}
	tmpl := b.podTemplate(h, sp, labels, args)
	if err := fuse.apply(&tmpl); err != nil {
		return nil, err
	}
	if warm {
		// Only the pod: it may outlive its Job's job (warm.go).
		tmpl.Labels[LabelWarm] = key
		tmpl.Labels[LabelWarmState] = warmBusy
	}
	one := int32(1)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: h.K8sName, Namespace: b.o.Namespace, Labels: labels, Annotations: handleAnnotations(h)},
		Spec: batchv1.JobSpec{
			Parallelism: &one, Completions: &one,
			BackoffLimit:            ptr(int32(0)),
			TTLSecondsAfterFinished: b.ttlSeconds(h),
			Template:                tmpl,
		},
	}, nil
}

// indexedJobFor is the one Indexed Job that runs the first attempts of every child of a
// batch: index i reads child i's job from the store (`kinetic runner --group`).
func (b *Backend) indexedJobFor(g driver.Group, first *job.Handle, fuse *fusePlan) (*batchv1.Job, error) {
	sp, err := acceleratorOf(first)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", g.ID, err)
	}
	labels := baseLabels()
	labels[LabelGroupID] = g.ID
	args := []string{"runner", "--store", first.Store, "--group", g.ID, "--index-env", "JOB_COMPLETION_INDEX", "--workspace", workDir}
	tmpl := b.podTemplate(first, sp, labels, args)
	if err := fuse.apply(&tmpl); err != nil {
		return nil, err
	}
	n := int32(g.Size)
	par := int32(max(1, min(g.Parallelism, g.Size)))
	mode := batchv1.IndexedCompletion
	ann := handleAnnotations(first)
	for _, k := range []string{"job_id", "group_index", "display_name", "created_at"} {
		delete(ann, AnnotationPrefix+k)
	}
	ann[AnnotationPrefix+"group_size"] = strconv.Itoa(g.Size)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: g.ID, Namespace: b.o.Namespace, Labels: labels, Annotations: ann},
		Spec: batchv1.JobSpec{
			Parallelism: &par, Completions: &n, CompletionMode: &mode,
			// Each index fails alone; retries are new attempts made by the engine.
			BackoffLimitPerIndex:    ptr(int32(0)),
			BackoffLimit:            ptr(int32(2147483647)),
			TTLSecondsAfterFinished: b.ttlSeconds(first),
			Template:                tmpl,
		},
	}, nil
}

// acceleratorOf is the handle's accelerator, on spot capacity when the handle says so
// (spot=True) even if the name lacks the :spot suffix.
func acceleratorOf(h *job.Handle) (accel.Spec, error) {
	name := h.Accelerator
	if h.Spot == "true" && !strings.HasSuffix(name, ":spot") {
		name += ":spot"
	}
	return accel.Parse(name)
}

// ttlSeconds keeps a finished Job for inspection a while (two hours for a debug job).
func (b *Backend) ttlSeconds(h *job.Handle) *int32 {
	if h.Debug == "true" {
		return ptr(int32(7200))
	}
	return ptr(int32(b.o.TTL.Seconds()))
}

func baseLabels() map[string]string {
	return map[string]string{LabelName: "kinetic", LabelApp: "kinetic"}
}

func ptr[T any](v T) *T { return &v }

// podTemplate is the pod of one job (or of every index of a batch).
func (b *Backend) podTemplate(h *job.Handle, sp accel.Spec, labels map[string]string, runnerArgs []string) corev1.PodTemplateSpec {
	pull := corev1.PullPolicy(b.o.ImagePullPolicy)
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	inImage := b.runnerInImage(h)
	mounts := []corev1.VolumeMount{{Name: workVolume, MountPath: workDir}}
	volumes := []corev1.Volume{{Name: workVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	runnerBin := job.RunnerPath // in the job's image (the handle's runner_in_image)
	var inits []corev1.Container
	if !inImage {
		// Copied in from the runner image by an init container, into a volume of its own.
		runnerBin = runnerDir + "/kinetic"
		mounts = append([]corev1.VolumeMount{{Name: runnerVolume, MountPath: runnerDir}}, mounts...)
		volumes = append([]corev1.Volume{{Name: runnerVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...)
		inits = []corev1.Container{{
			Name:            "kinetic-runner",
			Image:           b.o.RunnerImage,
			ImagePullPolicy: pull,
			Command:         []string{job.RunnerPath, "install-runner", runnerDir + "/kinetic"},
			VolumeMounts:    []corev1.VolumeMount{{Name: runnerVolume, MountPath: runnerDir}},
		}}
	}
	env := []corev1.EnvVar{
		{Name: "KINETIC_HOST_INDEX", Value: "0"},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
		// The runtime's defaults (docs/images.md): Keras on JAX, and JAX on the pod's
		// hardware only. The runner applies the captured variables over these, so a
		// user's own KERAS_BACKEND or JAX_PLATFORMS wins.
		{Name: "KERAS_BACKEND", Value: "jax"},
		{Name: "JAX_PLATFORMS", Value: image.JAXPlatforms(sp.Category())},
	}
	if b.o.StoreSecret != "" {
		volumes = append(volumes, corev1.Volume{Name: credsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: b.o.StoreSecret}}})
		mounts = append(mounts, corev1.VolumeMount{Name: credsVolume, MountPath: credsDir, ReadOnly: true})
		// What each store driver's client reads its credentials by (store/driver).
		for _, v := range store.PodCredentials(credsDir) {
			env = append(env, corev1.EnvVar{Name: v.Name, Value: v.Value})
		}
	}
	main := corev1.Container{
		Name:            "job",
		Image:           b.imageFor(h),
		ImagePullPolicy: pull,
		Command:         append([]string{runnerBin}, runnerArgs...),
		Env:             env,
		VolumeMounts:    mounts,
		WorkingDir:      workDir,
		Resources:       b.resources(sp),
	}
	spec := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		InitContainers:     inits,
		Containers:         []corev1.Container{main},
		Volumes:            volumes,
		ServiceAccountName: b.o.ServiceAccount,
		// The runner reports through the store; the pod needs no API token unless the
		// profile's service account is there for Workload Identity.
		AutomountServiceAccountToken: ptr(b.o.ServiceAccount != ""),
	}
	if secs, _ := strconv.Atoi(h.TimeoutSeconds); secs > 0 {
		// The runner stops the call at its limit and reports "timeout:"; the pod's own
		// deadline is the backstop for a runner that cannot (a node that hangs), with
		// room for the image pull and the set-up before the call.
		spec.ActiveDeadlineSeconds = ptr(int64(secs) + podStartAllowance)
	}
	if b.o.ClusterType == "gke" {
		if len(sp.NodeSelector) > 0 {
			spec.NodeSelector = sp.NodeSelector
		}
		for _, t := range sp.Tolerations {
			spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
				Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: copyMap(labels)}, Spec: spec}
}

// imageFor is the job's image: the handle's when it names one, else the backend's.
func (b *Backend) imageFor(h *job.Handle) string {
	switch img := h.ImageURI; {
	case img == "", img == "bundled", img == "prebuilt":
		return b.o.Image
	default:
		return img
	}
}

// runnerInImage reports whether h's pods start the runner from their own image: Kinetic
// put the runner in it (the handle's runner_in_image), and the pods run that image. Otherwise an init container copies the runner in from the runner image.
func (b *Backend) runnerInImage(h *job.Handle) bool {
	return h.RunnerInImage != "" && b.imageFor(h) == h.ImageURI
}

// resources asks for the accelerator: GPUs and TPUs as limits of their resource name
// (the device plugins' contract), CPUs as a request.
func (b *Backend) resources(sp accel.Spec) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	if b.o.IgnoreAcceleratorResources {
		sp = accel.Spec{}
	}
	switch {
	case sp.ResourceName != "" && sp.ResourcesPerHost > 0:
		q := resource.MustParse(strconv.Itoa(sp.ResourcesPerHost))
		r.Limits[corev1.ResourceName(sp.ResourceName)] = q
		r.Requests[corev1.ResourceName(sp.ResourceName)] = q
	case sp.CPUs > 0:
		r.Requests[corev1.ResourceCPU] = resource.MustParse(strconv.Itoa(sp.CPUs))
	default:
		cpu := b.o.CPU
		if cpu == "" {
			cpu = "250m"
		}
		if q, err := resource.ParseQuantity(cpu); err == nil {
			r.Requests[corev1.ResourceCPU] = q
		}
	}
	if b.o.Memory != "" {
		if q, err := resource.ParseQuantity(b.o.Memory); err == nil {
			r.Requests[corev1.ResourceMemory] = q
			r.Limits[corev1.ResourceMemory] = q
		}
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	return r
}

// handleAnnotations carries every non-empty handle field as kinetic.dev/<json name>.
func handleAnnotations(h *job.Handle) map[string]string {
	raw, _ := json.Marshal(h)
	var m map[string]any
	json.Unmarshal(raw, &m)
	out := map[string]string{}
	for k, v := range m {
		if s, ok := v.(string); ok && s != "" {
			out[AnnotationPrefix+k] = s
		}
	}
	return out
}

// handleFromAnnotations is the inverse of handleAnnotations.
func handleFromAnnotations(ann map[string]string) (*job.Handle, error) {
	m := map[string]string{}
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if f, ok := strings.CutPrefix(k, AnnotationPrefix); ok {
			m[f] = ann[k]
		}
	}
	raw, _ := json.Marshal(m)
	return job.DecodeHandle(raw)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// podStartAllowance is how long, in seconds, a pod with a time limit may take beyond it:
// the image pull and the runner's set-up come before the call's clock starts.
const podStartAllowance = 15 * 60
