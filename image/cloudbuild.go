package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/klauspost/compress/gzip"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/gcsblob" // gs:// for the build context
	cloudbuild "google.golang.org/api/cloudbuild/v1"
)

// CloudBuild builds with Google Cloud Build (REST API v1, Application Default
// Credentials): the build context goes to gs://Bucket/kinetic/context-<tag>.tgz, one
// docker build step makes the image and Cloud Build pushes it. It was written against
// the API's documentation and has not been run against Google Cloud.
type CloudBuild struct {
	Project string
	// Bucket holds build contexts ("" = PROJECT_cloudbuild, Cloud Build's default).
	Bucket string
	// Timeout bounds one build (default 30 minutes).
	Timeout time.Duration
	Client  *Client
}

// Name implements Builder.
func (b *CloudBuild) Name() string { return "cloudbuild" }

// Build implements Builder.
func (b *CloudBuild) Build(ctx context.Context, req *BuildRequest) (name.Digest, error) {
	if b.Project == "" {
		return name.Digest{}, fmt.Errorf("the Cloud Build builder needs a project: set project (KINETIC_PROJECT or GOOGLE_CLOUD_PROJECT)")
	}
	bucket := b.Bucket
	if bucket == "" {
		bucket = b.Project + "_cloudbuild"
	}
	object, err := b.uploadContext(ctx, req, bucket)
	if err != nil {
		return name.Digest{}, err
	}
	svc, err := cloudbuild.NewService(ctx)
	if err != nil {
		return name.Digest{}, fmt.Errorf("cloud build client: %w (run `gcloud auth application-default login`)", err)
	}
	op, err := svc.Projects.Builds.Create(b.Project, b.build(req, bucket, object)).Context(ctx).Do()
	if err != nil {
		return name.Digest{}, fmt.Errorf("start a Cloud Build in project %s: %w", b.Project, err)
	}
	say(req.Progress, "cloud build %s started", op.Name)
	if op, err = waitBuild(ctx, svc, op); err != nil {
		return name.Digest{}, err
	}
	if dg, ok, err := builtDigest(req, op); ok || err != nil {
		return dg, err
	}
	h, ok, err := b.Client.Lookup(ctx, req.Target)
	if err != nil || !ok {
		return name.Digest{}, fmt.Errorf("cloud build finished but %s is not in the registry (%v)", req.Target, err)
	}
	return req.Target.Context().Digest(h.String()), nil
}

// uploadContext writes the build context and uploads it to bucket; it returns its object.
func (b *CloudBuild) uploadContext(ctx context.Context, req *BuildRequest, bucket string) (string, error) {
	dir, err := os.MkdirTemp("", "kinetic-context-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := buildContext(ctx, b.Client, req, dir); err != nil {
		return "", err
	}
	object := "kinetic/context-" + req.Target.TagStr() + ".tgz"
	say(req.Progress, "uploading the build context to gs://%s/%s", bucket, object)
	if err := uploadContext(ctx, dir, "gs://"+bucket, object); err != nil {
		return "", fmt.Errorf("upload the build context to gs://%s: %w", bucket, err)
	}
	return object, nil
}

// build is the Cloud Build of the context in bucket/object: docker build and push.
func (b *CloudBuild) build(req *BuildRequest, bucket, object string) *cloudbuild.Build {
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	return &cloudbuild.Build{
		Source: &cloudbuild.Source{StorageSource: &cloudbuild.StorageSource{Bucket: bucket, Object: object}},
		Steps: []*cloudbuild.BuildStep{{
			Name: "gcr.io/cloud-builders/docker",
			Args: []string{"build", "--network=cloudbuild", "-t", req.Target.Name(), "."},
		}},
		Images:  []string{req.Target.Name()},
		Timeout: fmt.Sprintf("%ds", int(timeout.Seconds())),
	}
}

// waitBuild polls the build's operation until it is done; its error is the build's.
func waitBuild(ctx context.Context, svc *cloudbuild.Service, op *cloudbuild.Operation) (*cloudbuild.Operation, error) {
	var err error
	for !op.Done {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(3 * time.Second):
		}
		if op, err = svc.Operations.Get(op.Name).Context(ctx).Do(); err != nil {
			return nil, fmt.Errorf("cloud build status: %w", err)
		}
	}
	if op.Error != nil {
		return nil, fmt.Errorf("cloud build %s failed: %s", op.Name, op.Error.Message)
	}
	return op, nil
}

// builtDigest is the image's digest as the build's metadata reports it (ok), or how the
// build failed.
func builtDigest(req *BuildRequest, op *cloudbuild.Operation) (name.Digest, bool, error) {
	var meta cloudbuild.BuildOperationMetadata
	if err := json.Unmarshal(op.Metadata, &meta); err != nil || meta.Build == nil {
		return name.Digest{}, false, nil
	}
	if meta.Build.Status != "SUCCESS" {
		return name.Digest{}, false, fmt.Errorf("cloud build %s ended %s: %s (logs: %s)", meta.Build.Id, meta.Build.Status, meta.Build.StatusDetail, meta.Build.LogUrl)
	}
	if meta.Build.Results == nil {
		return name.Digest{}, false, nil
	}
	for _, im := range meta.Build.Results.Images {
		if im.Digest != "" {
			return req.Target.Context().Digest(im.Digest), true, nil
		}
	}
	return name.Digest{}, false, nil
}

// uploadContext writes dir as a gzipped tar to bucketURL/object.
func uploadContext(ctx context.Context, dir, bucketURL, object string) error {
	bk, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return err
	}
	defer bk.Close()
	w, err := bk.NewWriter(ctx, object, nil)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return tarEntry(tw, p, filepath.ToSlash(rel), fi)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// tarEntry writes p (fi) into tw as name, with its content when it is a regular file.
func tarEntry(tw *tar.Writer, p, name string, fi os.FileInfo) error {
	h, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	h.Name = name
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
