package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// GCS FUSE: Data("gs://…", fuse=True), as an argument or under volumes=, is mounted in
// the job's pod by the Cloud Storage FUSE CSI driver (an ephemeral volume, read-only,
// only-dir = the data's prefix; the pod annotation gke-gcsfuse/volumes turns on the
// driver's sidecar) instead of being downloaded by the runner. The runner is told where
// each one is (--fuse-paths) and reads it there.

// fuseMountRoot holds the mounts of fused arguments (volumes are mounted at their path).
const fuseMountRoot = "/kinetic/fuse"

// fusePlan is what a pod needs for the fused Data of its job.
type fusePlan struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	// paths maps the Data's index in the spec to where the function finds it.
	paths map[string]string
	// first names the first fused Data, for messages.
	first string
}

// planFuse returns the pod's part for refs' fused gs:// Data (nil when there is none).
func planFuse(refs []job.DataRef) (*fusePlan, error) {
	var p *fusePlan
	for i, r := range refs {
		if _, _, gcs := data.GCS(r); !r.Fuse || !gcs {
			continue
		}
		if p == nil {
			p = &fusePlan{paths: map[string]string{}, first: r.Source}
		}
		at := r.Mount
		if at == "" || r.Kind == data.GSObject {
			// An argument, or one object: the driver mounts a directory (the object's),
			// so a volume that is one file is linked to it by the runner instead.
			at = fuseMountRoot + "/" + strconv.Itoa(i)
		}
		v, err := data.FuseSpec(r, "kinetic-fuse-"+strconv.Itoa(i), at)
		if err != nil {
			return nil, err
		}
		var vol corev1.Volume
		var mount corev1.VolumeMount
		if err := convert(v.Volume, &vol); err != nil {
			return nil, err
		}
		if err := convert(v.Mount, &mount); err != nil {
			return nil, err
		}
		p.volumes, p.mounts = append(p.volumes, vol), append(p.mounts, mount)
		p.paths[strconv.Itoa(r.SlotAt(i))] = v.Path // the Data's number, whatever subset a child carries
	}
	return p, nil
}

func convert(from map[string]any, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// apply adds the plan to a pod template and the runner's arguments.
func (p *fusePlan) apply(tmpl *corev1.PodTemplateSpec) error {
	if p == nil {
		return nil
	}
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	tmpl.Annotations[data.FusePodAnnotation] = "true"
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, p.volumes...)
	c := &tmpl.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, p.mounts...)
	paths, err := json.Marshal(p.paths)
	if err != nil {
		return err
	}
	c.Command = append(c.Command, "--fuse-paths", string(paths))
	return nil
}

// fuseOf plans the fused Data of the job h (its spec in the store).
func (b *Backend) fuseOf(ctx context.Context, h *job.Handle) (*fusePlan, error) {
	raw, err := b.st.Get(ctx, store.SpecKey(h.JobID))
	if store.IsNotFound(err) {
		return nil, nil // no spec to read Data from: the runner reports the missing spec
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: read its spec: %w", h.JobID, err)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return nil, err
	}
	return b.checkedFuse(ctx, spec.Data)
}

// fuseOfGroup plans the fused Data of batch gid's children (its template).
func (b *Backend) fuseOfGroup(ctx context.Context, gid string) (*fusePlan, error) {
	t, err := layout.ReadTemplate(ctx, b.st, gid)
	if store.IsNotFound(err) {
		return nil, nil // children written one by one: nothing of the kind
	}
	if err != nil {
		return nil, err
	}
	return b.checkedFuse(ctx, t.Spec.Data)
}

func (b *Backend) checkedFuse(ctx context.Context, refs []job.DataRef) (*fusePlan, error) {
	p, err := planFuse(refs)
	if err != nil || p == nil {
		return p, err
	}
	if err := b.checkFuseDriver(ctx, p.first); err != nil {
		return nil, err
	}
	return p, nil
}

// fuseRecheck is how long a refusal is remembered: the driver may be turned on while a
// long-lived engine runs, and the next job after that must go.
const fuseRecheck = time.Minute

// checkFuseDriver refuses fused Data on a cluster without the Cloud Storage FUSE CSI
// driver (its pod would wait for ever). The driver, once found, is remembered; its
// absence is looked up again after fuseRecheck. A client that may not read CSIDrivers (a
// namespaced Role) cannot tell: the job then goes ahead.
func (b *Backend) checkFuseDriver(ctx context.Context, source string) error {
	b.fuseMu.Lock()
	defer b.fuseMu.Unlock()
	now := time.Now
	if b.now != nil {
		now = b.now
	}
	if b.fuseChecked.IsZero() || b.fuseErr != nil && now().Sub(b.fuseChecked) >= fuseRecheck {
		cctx, cancel := ctxTimeout(ctx)
		defer cancel()
		_, err := b.cs.StorageV1().CSIDrivers().Get(cctx, data.FuseDriver, metav1.GetOptions{})
		switch {
		case err == nil, apierrors.IsForbidden(err):
			b.fuseErr = nil
		case apierrors.IsNotFound(err):
			b.fuseErr = errNoFuseDriver
		default:
			return fmt.Errorf("Data(%q, fuse=True): look for the Cloud Storage FUSE CSI driver: %w", source, err)
		}
		b.fuseChecked = now()
	}
	if b.fuseErr != nil {
		// Named for this job's Data, not the one that was refused first.
		return fmt.Errorf("Data(%q, fuse=True): this cluster has no Cloud Storage FUSE CSI driver (%s), so the data cannot be mounted in the job's pod; on GKE turn it on with `gcloud container clusters update CLUSTER --update-addons GcsFuseCsiDriver=ENABLED` (`kinetic up` does), or drop fuse=True to have the data downloaded", source, data.FuseDriver)
	}
	return nil
}

var errNoFuseDriver = errors.New("no Cloud Storage FUSE CSI driver")
