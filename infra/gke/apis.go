package gke

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/serviceusage/apiv1/serviceusagepb"

	"github.com/kinetic-run/kinetic/errs"
)

// RequiredAPIs are the Google APIs up calls or the cluster needs: GKE, Artifact
// Registry, IAM (service accounts), Compute Engine (machine types, the nodes), Cloud
// Storage (the store), and IAM Service Account Credentials (Workload Identity tokens of
// job pods). Up enables those that are not (Service Usage API).
var RequiredAPIs = []string{
	"container.googleapis.com",
	"artifactregistry.googleapis.com",
	"iam.googleapis.com",
	"iamcredentials.googleapis.com",
	"compute.googleapis.com",
	"storage.googleapis.com",
}

// planAPIs reads which RequiredAPIs are enabled on the project (one BatchGetServices)
// and returns the step that enables the others, and whether any is missing.
func (c *Clients) planAPIs(ctx context.Context, cfg *Config) (Step, bool, error) {
	names := make([]string, len(RequiredAPIs))
	for i, a := range RequiredAPIs {
		names[i] = "projects/" + cfg.Project + "/services/" + a
	}
	got, err := c.Services.BatchGetServices(ctx, &serviceusagepb.BatchGetServicesRequest{Parent: "projects/" + cfg.Project, Names: names})
	if err != nil {
		if strings.Contains(err.Error(), "requires a quota project") {
			return Step{}, false, &apiError{text: fmt.Sprintf("read which APIs are enabled on project %s: Google refuses user credentials without a quota project for the Service Usage API: run `gcloud auth application-default set-quota-project %s`, then run the same command again", cfg.Project, cfg.Project), code: errs.FailedPrecondition, err: err}
		}
		return Step{}, false, apiErr("read which APIs are enabled on project "+cfg.Project+" (Service Usage API)", err)
	}
	enabled := map[string]bool{}
	for _, s := range got.GetServices() {
		if s.GetState() == serviceusagepb.State_ENABLED {
			enabled[s.GetName()[strings.LastIndex(s.GetName(), "/")+1:]] = true
		}
	}
	var missing []string
	for _, a := range RequiredAPIs {
		if !enabled[a] {
			missing = append(missing, a)
		}
	}
	if len(missing) == 0 {
		return Step{What: "APIs " + shortAPIs(RequiredAPIs), Action: ActOK, Detail: "enabled"}, false, nil
	}
	return Step{What: "APIs " + shortAPIs(missing), Action: ActEnable, Detail: "Service Usage API; takes a minute",
		apply: func(ctx context.Context, pr *progress) error { return c.enableAPIs(ctx, cfg, missing, pr) }}, true, nil
}

// enableAPIs enables services in one batch and polls the operation.
func (c *Clients) enableAPIs(ctx context.Context, cfg *Config, services []string, pr *progress) error {
	op, err := c.Services.BatchEnableServices(ctx, &serviceusagepb.BatchEnableServicesRequest{Parent: "projects/" + cfg.Project, ServiceIds: services})
	if err != nil {
		return apiErr("enable "+strings.Join(services, ", "), err)
	}
	pr.op = op.Name()
	for !op.Done() {
		pr.tick("enabling")
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		if _, err := op.Poll(ctx); err != nil {
			return apiErr("enable "+strings.Join(services, ", "), err)
		}
	}
	// Google's operation can end with some services failed: read them again.
	fresh, err := c.Services.BatchGetServices(ctx, &serviceusagepb.BatchGetServicesRequest{Parent: "projects/" + cfg.Project,
		Names: prefixed("projects/"+cfg.Project+"/services/", services)})
	if err != nil {
		return apiErr("read the APIs just enabled", err)
	}
	var still []string
	for _, s := range fresh.GetServices() {
		if s.GetState() != serviceusagepb.State_ENABLED {
			still = append(still, s.GetName()[strings.LastIndex(s.GetName(), "/")+1:])
		}
	}
	if len(still) > 0 {
		slices.Sort(still)
		return fmt.Errorf("still not enabled after the operation: %s (enable them in the console, or `gcloud services enable %s --project %s`)", strings.Join(still, ", "), strings.Join(still, " "), cfg.Project)
	}
	// Enabled is not ready: Google's APIs refuse calls for a while after.
	return c.waitAPIsReady(ctx, cfg, services, pr)
}

func prefixed(p string, s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = p + v
	}
	return out
}

// shortAPIs names APIs without the common suffix: "container, iam, …".
func shortAPIs(a []string) string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = strings.TrimSuffix(v, ".googleapis.com")
	}
	return strings.Join(out, ", ")
}
