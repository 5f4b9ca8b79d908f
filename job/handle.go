package job

import (
	"encoding/json"
	"fmt"
)

// Handle is handle.json: the durable description of a submitted job, with the API reference's
// JobHandle fields. Every field is a string so that any language reads it without a
// schema; unknown keys are ignored on read so older clients read newer handles.
type Handle struct {
	JobID       string `json:"job_id"`
	Backend     string `json:"backend"`
	Project     string `json:"project"`
	ClusterName string `json:"cluster_name"`
	Zone        string `json:"zone"`
	Namespace   string `json:"namespace"`
	BucketName  string `json:"bucket_name"`
	K8sName     string `json:"k8s_name"`
	ImageURI    string `json:"image_uri"`
	Accelerator string `json:"accelerator"`
	FuncName    string `json:"func_name"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
	// SubmittedAt is when handle.json was written (RFC 3339), after the working tree,
	// data and payload were uploaded: CreatedAt to SubmittedAt is the upload.
	SubmittedAt string `json:"submitted_at,omitempty"`
	GroupID     string `json:"group_id,omitempty"`
	GroupKind   string `json:"group_kind,omitempty"`
	GroupIndex  string `json:"group_index,omitempty"`
	Debug       string `json:"debug,omitempty"`
	// Spot is "true" when the job asked for spot (preemptible) capacity, whether by
	// spot=True or an accelerator name ending in ":spot".
	Spot string `json:"spot,omitempty"`
	// TimeoutSeconds is the call's time limit in seconds (timeout=; "" = none), for
	// backends that enforce a deadline of their own around the runner's (a pod's
	// activeDeadlineSeconds). Every handle field is a string, as the API reference says.
	TimeoutSeconds string `json:"timeout_seconds,omitempty"`
	// KubeContext is the kubeconfig context the job was submitted through ("" when none
	// was configured): with ClusterName, Project, Zone and Namespace it says which cluster
	// holds the job, whatever profile is active when someone attaches
	// (kubernetes.ClusterOf).
	KubeContext string `json:"kube_context,omitempty"`
	// Location is the backend's own record of where the job is (SetLocation,
	// LocationOf: location.go); "" on handles written before it.
	Location string `json:"location,omitempty"`
	// ShippedRoot is the submitter's shipped root (absolute, on the submitting machine):
	// the localRoot of a debugger's path mappings.
	ShippedRoot string `json:"shipped_root,omitempty"`
	// RunnerInImage is the runner image (by digest) whose binary ImageURI holds at
	// RunnerPath: Kinetic added the runner to the image it built, or to the user's image
	// (container_image) when that is in the registry of image_registry, so the job's pods
	// start the runner from their own image. Empty: the pods copy the runner in from
	// the backend's runner image first (an init container), as for a user's image in
	// another registry. Recorded here, with the image, so that a pod of the job made later
	// (a retry, a batch's Indexed Job, a warm pod's key) is made the same way.
	RunnerInImage string `json:"runner_in_image,omitempty"`
	// ContainerImage is the user's container_image as given, when ImageURI is a copy of
	// it with the runner added (in Kinetic's repository): what the user knows the job's
	// image by. Empty otherwise (ImageURI is then the image as built or given).
	ContainerImage string `json:"container_image,omitempty"`
	// Store is the full URL of the store holding the job: with it, any machine can attach.
	Store string `json:"store"`
	// OutputDir is the job's KINETIC_OUTPUT_DIR.
	OutputDir string `json:"output_dir,omitempty"`
}

// DecodeHandle parses handle.json. Unknown keys are ignored; non-string values of known
// keys (as older or foreign writers may produce, e.g. group_index as a number) are
// accepted and turned into strings.
func DecodeHandle(b []byte) (*Handle, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("handle.json is not a JSON object: %w", err)
	}
	flat := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case nil:
		case string:
			flat[k] = v
		case bool, float64:
			flat[k] = fmt.Sprint(v)
		case json.Number:
			flat[k] = v.String()
		}
	}
	fb, _ := json.Marshal(flat)
	var h Handle
	if err := json.Unmarshal(fb, &h); err != nil {
		return nil, fmt.Errorf("handle.json: %w", err)
	}
	if !ValidName(h.JobID) {
		return nil, fmt.Errorf("handle.json: job_id %q is not a valid job ID", h.JobID)
	}
	return &h, nil
}

// Encode returns the handle as indented JSON.
func (h *Handle) Encode() []byte {
	b, _ := json.MarshalIndent(h, "", "  ")
	return append(b, '\n')
}
