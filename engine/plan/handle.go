package plan

import (
	"context"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

// handle settles the output directory and the names, and makes the job's handle: what
// makes the job exist once written, and what every reader starts from.
func handle(ctx context.Context, env Env, req *Request, p *Job) error {
	outDir := req.OutputDir
	if outDir == "" {
		outDir = p.Cfg.Get(config.OutputDir)
	}
	if outDir == "" {
		outDir = DefaultOutputDir(p.Store, p.id)
	}
	p.Spec.OutputDir = outDir
	name := req.FuncName
	if name == "" {
		switch req.Kind {
		case job.KindEntry:
			name = req.Entry.Func
		case job.KindCommand:
			name = filepath.Base(req.Command[0])
		}
	}
	display := req.DisplayName
	if display == "" {
		display = name
	}
	imageURI := req.ContainerImage
	if p.Spec.Image != "" {
		imageURI = p.Spec.Image // what the job really runs in (a digest for bundled images)
	}
	w, st := p.where, p.Store
	p.Handle = &job.Handle{
		JobID: p.id, Backend: w.Backend, Project: w.Project,
		ClusterName: w.ClusterName, Zone: w.Zone, Namespace: w.Namespace,
		BucketName: st.Bucket(), K8sName: p.id, ImageURI: imageURI, Accelerator: p.acc.Name,
		FuncName: name, DisplayName: display, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
		Debug: strconv.FormatBool(req.Debug), Store: st.URL(), OutputDir: outDir,
		Spot: strconv.FormatBool(p.acc.Spot), KubeContext: w.KubeContext, ShippedRoot: p.Root,
		RunnerInImage: p.RunnerInImage, ContainerImage: p.ContainerImage, Location: w.Location,
	}
	if p.Spec.TimeoutSeconds > 0 {
		p.Handle.TimeoutSeconds = strconv.Itoa(p.Spec.TimeoutSeconds)
	}
	return nil
}
