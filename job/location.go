package job

import (
	"encoding/json"
	"fmt"
)

// The location: what the backend that runs a job needs to find it again (a cluster, a
// namespace, a context; a scheduler's job number), recorded by that backend in its own
// versioned shape, as the handle's one string field "location" (every handle field is a
// string). Nothing but the backend reads it. The flat fields (project, zone,
// cluster_name, namespace, kube_context) stay in the handle: they are the public view the
// SDK's and --json's handle shows, with the reference's names, and what records written
// before the location had (a backend falls back to them when Location is "").

// location is the encoded form: the writer's version and its data.
type location struct {
	V    int             `json:"v"`
	Data json.RawMessage `json:"data"`
}

// maxLocation bounds what a handle's location may hold.
const maxLocation = 64 << 10

// SetLocation records v (JSON-encoded) as the handle's location, version version (≥ 1).
func (h *Handle) SetLocation(version int, v any) error {
	if version < 1 {
		return fmt.Errorf("job.SetLocation: version %d: versions start at 1", version)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("job.SetLocation: %w", err)
	}
	b, _ := json.Marshal(location{V: version, Data: data})
	h.Location = string(b)
	return nil
}

// LocationOf decodes the handle's location into v and returns its version; 0 and no
// error when the handle has none (written before locations, or by a backend that
// records none). A location that does not parse is an error naming the handle's job.
func (h *Handle) LocationOf(v any) (int, error) {
	if h.Location == "" {
		return 0, nil
	}
	if len(h.Location) > maxLocation {
		return 0, fmt.Errorf("handle of %s: location is %d bytes, more than %d", h.JobID, len(h.Location), maxLocation)
	}
	var l location
	if err := json.Unmarshal([]byte(h.Location), &l); err != nil || l.V < 1 || len(l.Data) == 0 {
		return 0, fmt.Errorf("handle of %s: location %q is not a versioned location (written by another program?)", h.JobID, clip(h.Location))
	}
	if err := json.Unmarshal(l.Data, v); err != nil {
		return 0, fmt.Errorf("handle of %s: location version %d does not hold what its backend reads: %w", h.JobID, l.V, err)
	}
	return l.V, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
