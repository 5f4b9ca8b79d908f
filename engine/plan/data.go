package plan

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/data"
	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/mountns"
)

// dataStep validates the call's Data and volumes (uploads happen when the job is
// written); volumes of a job on this machine need a mount namespace of its own.
func dataStep(ctx context.Context, env Env, req *Request, p *Job) error {
	refs, err := dataRefs(req)
	if err != nil {
		return err
	}
	p.Spec.Data = refs
	if p.filesShared && p.Cfg.Get(config.Container) == "" {
		return volumesHere(refs)
	}
	return nil
}

// dataRefs parses the call's Data.
func dataRefs(req *Request) ([]data.Ref, error) {
	var refs []data.Ref
	for i, d := range req.Data {
		r, err := data.Parse(d.Path, d.Fuse, d.HFTrustRemoteCode)
		if err != nil {
			return nil, withCode(errs.InvalidArgument, fmt.Errorf("Data #%d: %w", i, err))
		}
		if d.Mount != "" {
			if !filepath.IsAbs(d.Mount) || filepath.Clean(d.Mount) == "/" {
				return nil, errs.Errorf(errs.InvalidArgument, "volumes: mount path %q must be an absolute path other than /, e.g. /data", d.Mount)
			}
			if slices.Contains(strings.Split(d.Mount, "/"), "..") {
				// Cleaned, /data/../../etc would be /etc: not the directory the caller named.
				return nil, errs.Errorf(errs.InvalidArgument, "volumes: mount path %q has a '..' in it, which leaves the directory it names; give the directory itself, e.g. /data", d.Mount)
			}
			r.Mount = filepath.Clean(d.Mount)
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// volumesHere refuses volumes a job on this machine could not be given: they are
// mounted in a mount namespace of the job's own (internal/mountns), which this machine
// must allow, since nothing is ever made at their paths on the machine itself.
func volumesHere(refs []data.Ref) error {
	for _, r := range refs {
		if r.Mount == "" {
			continue
		}
		if err := mountns.Available(); err != nil {
			return errs.Errorf(errs.FailedPrecondition, "volumes: %s cannot be mounted for a job on this machine: %v; run the job in a container (container=\"podman\" or \"docker\"), which mounts volumes itself, or pass the Data as an argument (the function gets its path)", r.Mount, err)
		}
	}
	return nil
}

// dataPaths are the local paths of the request's Data, left out of the shipped root.
func (r *Request) dataPaths() []string {
	var out []string
	for _, d := range r.Data {
		if !strings.Contains(d.Path, "://") {
			out = append(out, d.Path)
		}
	}
	return out
}
