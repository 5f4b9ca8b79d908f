package gke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"google.golang.org/api/googleapi"
	storagev1 "google.golang.org/api/storage/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/image"
)

// Runner finds and publishes the runner image in a registry.
type Runner interface {
	// Find returns the runner image by digest when registry holds it (one HEAD).
	Find(ctx context.Context, registry string) (ref string, ok bool, err error)
	// Publish pushes it and returns it by digest.
	Publish(ctx context.Context, registry string, progress io.Writer) (string, error)
}

// ImageRunner is the Runner of image.PublishRunner: this CLI's runner binaries.
type ImageRunner struct {
	Images *image.Client
	Source image.RunnerSource
}

func (r ImageRunner) repo(ctx context.Context, registry string) (string, map[string]string, string, error) {
	bins, err := r.Source.Binaries(ctx)
	if err != nil {
		return "", nil, "", err
	}
	tag, err := image.RunnerTag(bins)
	return strings.TrimSuffix(registry, "/") + "/" + image.RunnerRepoName, bins, tag, err
}

// Find implements Runner.
func (r ImageRunner) Find(ctx context.Context, registry string) (string, bool, error) {
	repoName, _, tag, err := r.repo(ctx, registry)
	if err != nil {
		return "", false, err
	}
	repo, err := image.ParseRepository(repoName)
	if err != nil {
		return "", false, err
	}
	h, ok, err := r.Images.Lookup(ctx, repo.Tag(tag))
	if err != nil || !ok {
		return repo.Tag(tag).Name(), false, err
	}
	return repo.Digest(h.String()).Name(), true, nil
}

// Publish implements Runner.
func (r ImageRunner) Publish(ctx context.Context, registry string, progress io.Writer) (string, error) {
	repoName, bins, _, err := r.repo(ctx, registry)
	if err != nil {
		return "", err
	}
	repo, err := image.ParseRepository(repoName)
	if err != nil {
		return "", err
	}
	d, err := r.Images.PublishRunner(ctx, repo, bins, progress)
	return d.Name(), err
}

func act(need bool) string {
	if need {
		return ActCreate
	}
	return ActOK
}

func (c *Clients) createRepo(ctx context.Context, cfg *Config, pr *progress) error {
	op, err := c.Registry.CreateRepository(ctx, &artifactregistrypb.CreateRepositoryRequest{Parent: cfg.repoParent(), RepositoryId: cfg.Repository(),
		Repository: &artifactregistrypb.Repository{Format: artifactregistrypb.Repository_DOCKER, Description: "Kinetic images (kinetic up)", Labels: managedLabels()}})
	if exists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pr.op = op.Name()
	for !op.Done() {
		pr.tick("creating")
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		if _, err := op.Poll(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (c *Clients) updateCluster(ctx context.Context, cfg *Config, pr *progress, u *containerpb.ClusterUpdate) error {
	op, err := c.whenIdle(ctx, cfg, pr, func() (*containerpb.Operation, error) {
		return c.Cluster.UpdateCluster(ctx, &containerpb.UpdateClusterRequest{Name: cfg.clusterName(), Update: u})
	})
	if err != nil {
		return err
	}
	return c.waitOp(ctx, cfg, op, pr)
}

func hasBinding(p *iampb.Policy, role, member string) bool {
	for _, b := range p.GetBindings() {
		if b.GetRole() == role && b.GetCondition() == nil && slices.Contains(b.GetMembers(), member) {
			return true
		}
	}
	return false
}

// addBinding adds member to role's binding; false if it was already there.
func addBinding(p *iampb.Policy, role, member string) bool {
	if hasBinding(p, role, member) {
		return false
	}
	for _, b := range p.Bindings {
		if b.GetRole() == role && b.GetCondition() == nil {
			b.Members = append(b.Members, member)
			return true
		}
	}
	p.Bindings = append(p.Bindings, &iampb.Binding{Role: role, Members: []string{member}})
	return true
}

// removeBinding takes member out of role's binding; false if it was not there.
func removeBinding(p *iampb.Policy, role, member string) bool {
	changed := false
	var keep []*iampb.Binding
	for _, b := range p.Bindings {
		if b.GetRole() == role && slices.Contains(b.Members, member) {
			b.Members = slices.DeleteFunc(b.Members, func(m string) bool { return m == member })
			changed = true
		}
		if len(b.Members) > 0 {
			keep = append(keep, b)
		}
	}
	p.Bindings = keep
	return changed
}

func hasStorageBinding(p *storagev1.Policy, role, member string) bool {
	for _, b := range p.Bindings {
		if b.Role == role && b.Condition == nil && slices.Contains(b.Members, member) {
			return true
		}
	}
	return false
}

func grantBucket(ctx context.Context, st *storagev1.Service, bucket, role, member string) error {
	pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
	if err != nil {
		return err
	}
	if hasStorageBinding(pol, role, member) {
		return nil
	}
	pol.Bindings = append(pol.Bindings, &storagev1.PolicyBindings{Role: role, Members: []string{member}})
	_, err = st.Buckets.SetIamPolicy(bucket, pol).Context(ctx).Do()
	return err
}

func revokeBucket(ctx context.Context, st *storagev1.Service, bucket, role, member string) error {
	pol, err := st.Buckets.GetIamPolicy(bucket).Context(ctx).Do()
	if err != nil {
		return err
	}
	changed := false
	var keep []*storagev1.PolicyBindings
	for _, b := range pol.Bindings {
		if b.Role == role && slices.Contains(b.Members, member) {
			b.Members = slices.DeleteFunc(b.Members, func(m string) bool { return m == member })
			changed = true
		}
		if len(b.Members) > 0 {
			keep = append(keep, b)
		}
	}
	if !changed {
		return nil
	}
	pol.Bindings = keep
	_, err = st.Buckets.SetIamPolicy(bucket, pol).Context(ctx).Do()
	return err
}

func httpCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// apiErr words an API failure for a person, without gRPC's or HTTP's text: permission,
// sign-in, a disabled API and a missing project each get their fix. The original error
// stays in the chain (errors.Is/As, errs.CodeOf).
func apiErr(what string, err error) error {
	code, msg := describe(err)
	text := fmt.Sprintf("%s: %s", what, msg)
	for _, r := range apiErrRules {
		if r.match(code, msg) {
			text = r.text(what, msg)
			break
		}
	}
	return &apiError{text: text, code: code, err: err}
}

// apiErrRule words the failures it matches.
type apiErrRule struct {
	match func(code errs.Code, msg string) bool
	text  func(what, msg string) string
}

func msgHas(subs ...string) func(errs.Code, string) bool {
	return func(_ errs.Code, msg string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(msg, s) })
	}
}

func codeIs(codes ...errs.Code) func(errs.Code, string) bool {
	return func(code errs.Code, _ string) bool { return slices.Contains(codes, code) }
}

// apiErrRules are apiErr's wordings, the first that matches wins.
var apiErrRules = []apiErrRule{
	{codeIs(errs.Cancelled), func(what, _ string) string { return what + ": interrupted" }},
	{func(_ errs.Code, msg string) bool { return quotaRE.MatchString(msg) }, func(what, msg string) string {
		m := quotaRE.FindStringSubmatch(msg)
		return fmt.Sprintf("%s: quota %s in %s %s is used up (limit %s): ask for more in the console (IAM & Admin → Quotas, filter by %s), or choose a zone in another region", what, m[1], m[3], m[4], m[2], m[1])
	}},
	{func(_ errs.Code, msg string) bool { return gkeQuotaRE.MatchString(msg) }, func(what, msg string) string {
		m := gkeQuotaRE.FindStringSubmatch(msg)
		return fmt.Sprintf("%s: the project's %s quota of %s is used up (%s): ask for more in the console (IAM & Admin → Quotas, filter by %s), or choose a zone in another region", what, m[1], m[2], msg, m[2])
	}},
	{msgHas("requires a quota project"), func(what, msg string) string {
		return fmt.Sprintf("%s: Google refuses user credentials without a quota project (%s): run `gcloud auth application-default set-quota-project PROJECT` with your project, then the command again", what, msg)
	}},
	{msgHas("has not been used", "SERVICE_DISABLED", "it is disabled"), func(what, msg string) string {
		return fmt.Sprintf("%s: an API is disabled on the project (%s): run `kinetic up` (it enables the APIs it needs), or `gcloud services enable %s`", what, msg, strings.Join(RequiredAPIs, " "))
	}},
	{codeIs(errs.PermissionDenied), func(what, msg string) string {
		return fmt.Sprintf("%s: permission denied (%s): your account needs roles/container.admin, roles/artifactregistry.admin, roles/iam.serviceAccountAdmin, roles/storage.admin and roles/serviceusage.serviceUsageAdmin on the project; if the APIs are off, `gcloud services enable %s` (as an owner) turns them on", what, msg, strings.Join(RequiredAPIs, " "))
	}},
	{msgHas("Unauthenticated", "could not find default credentials", "oauth2", "invalid_grant"), func(what, msg string) string {
		return fmt.Sprintf("%s: not signed in to Google (%s): run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file", what, msg)
	}},
	{func(code errs.Code, msg string) bool {
		return code == errs.NotFound && strings.Contains(msg, "project")
	}, func(what, msg string) string {
		return fmt.Sprintf("%s: no such project, or not visible to your account (%s): check --project", what, msg)
	}},
	{codeIs(errs.Unavailable, errs.DeadlineExceeded), func(what, msg string) string {
		return fmt.Sprintf("%s: Google's API did not answer (%s): check the network, then run the command again", what, msg)
	}},
}

// apiError is an API failure worded for a person.
type apiError struct {
	text string
	code errs.Code
	err  error
}

func (e *apiError) Error() string   { return e.text }
func (e *apiError) Unwrap() error   { return e.err }
func (e *apiError) Code() errs.Code { return e.code }

// describe is an error's code and its message as Google wrote it (no "rpc error: code
// = … desc =", no "googleapi: Error 403:").
func describe(err error) (errs.Code, string) {
	if errors.Is(err, context.Canceled) {
		return errs.Cancelled, "interrupted"
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		msg := ge.Message
		if msg == "" {
			msg = http.StatusText(ge.Code)
		}
		w, ok := httpCodes[ge.Code]
		return wordCode(w, ok, errs.Unavailable, msg)
	}
	if st, ok := status.FromError(err); ok {
		w, ok := grpcCodes[st.Code()]
		return wordCode(w, ok, errs.Internal, st.Message())
	}
	return errs.CodeOf(err), err.Error()
}

// codeWording is how a status of Google's reads: its code, and what goes before (or,
// with replace, instead of) the message.
type codeWording struct {
	code    errs.Code
	prefix  string
	replace bool
}

// httpCodes and grpcCodes word the statuses describe knows; any other is unknown.
var (
	httpCodes = map[int]codeWording{
		http.StatusForbidden:    {code: errs.PermissionDenied},
		http.StatusUnauthorized: {code: errs.PermissionDenied, prefix: "Unauthenticated: "},
		http.StatusNotFound:     {code: errs.NotFound},
	}
	grpcCodes = map[codes.Code]codeWording{
		codes.PermissionDenied: {code: errs.PermissionDenied},
		codes.Unauthenticated:  {code: errs.PermissionDenied, prefix: "Unauthenticated: "},
		codes.NotFound:         {code: errs.NotFound},
		codes.Unavailable:      {code: errs.Unavailable},
		codes.DeadlineExceeded: {code: errs.DeadlineExceeded},
		codes.Canceled:         {code: errs.Cancelled, prefix: "interrupted", replace: true},
	}
)

// wordCode is w applied to msg; a status not known (!ok) is code other.
func wordCode(w codeWording, ok bool, other errs.Code, msg string) (errs.Code, string) {
	switch {
	case !ok:
		return other, msg
	case w.replace:
		return w.code, w.prefix
	}
	return w.code, w.prefix + msg
}

// firstLine is the first line of Google's message, at most 200 characters.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}

// systemMachineType picks the machine type of a new cluster's system pool among those the
// zone offers, and records it (and why, when it is not the first choice) in p.
func (c *Clients) systemMachineType(ctx context.Context, cfg *Config, p *Plan) (string, error) {
	offered, err := c.zoneMachineTypes(ctx, cfg)
	if err != nil {
		return "", err
	}
	mt, note, err := pickSystemMachineType(cfg.Zone, offered)
	if err != nil {
		return "", err
	}
	p.SystemMachineType = mt
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return mt, nil
}
