package data

import (
	"path"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// FUSE on Kubernetes: Data(..., fuse=True) on gs:// becomes a Cloud Storage FUSE CSI
// ephemeral volume in the job's pod, mounted lazily instead of downloaded. This file
// builds that part of the pod spec (as plain JSON-shaped values, so the package needs no
// Kubernetes types); the Kubernetes backend puts it into the pod. It was checked against
// the GKE documentation of the driver, not against a cluster with the driver.

// FuseDriver is the CSI driver of GKE's Cloud Storage FUSE add-on.
const FuseDriver = "gcsfuse.csi.storage.gke.io"

// FusePodAnnotation turns on the driver's sidecar injection for a pod.
const FusePodAnnotation = "gke-gcsfuse/volumes"

// FuseVolume is a pod volume and the matching mount for one fused Data.
type FuseVolume struct {
	Volume map[string]any `json:"volume"`
	Mount  map[string]any `json:"volumeMount"`
	// Path is where the function finds the data (the mount, or the object in it).
	Path string `json:"path"`
}

// FuseSpec returns the volume for ref, mounted at mountPath (the volume's own path for
// volumes=, else a path chosen by the caller). Only gs:// data can be fused: a local path
// must be uploaded first, and an hf:// dataset is made on the worker.
func FuseSpec(ref Ref, name, mountPath string) (FuseVolume, error) {
	bucket, key, ok := GCS(ref)
	if !ok || !ref.Fuse {
		return FuseVolume{}, errs.Errorf(errs.InvalidArgument, "Data(%q): only gs:// data with fuse=True is mounted with Cloud Storage FUSE", ref.Source)
	}
	attrs := map[string]any{"bucketName": bucket}
	opts := []string{"implicit-dirs"}
	dir := strings.TrimSuffix(key, "/")
	if ref.Kind == GSObject {
		dir = path.Dir(key)
		if dir == "." {
			dir = ""
		}
	}
	if dir != "" {
		opts = append(opts, "only-dir="+dir)
	}
	attrs["mountOptions"] = strings.Join(opts, ",")
	v := FuseVolume{
		Volume: map[string]any{"name": name, "csi": map[string]any{"driver": FuseDriver, "readOnly": true, "volumeAttributes": attrs}},
		Mount:  map[string]any{"name": name, "mountPath": mountPath, "readOnly": true},
		Path:   mountPath,
	}
	if ref.Kind == GSObject {
		v.Path = path.Join(mountPath, path.Base(key))
	}
	return v, nil
}
