package gke_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

// TestUpEnablesAPIs: on a new project (no API enabled) the first plan is the one step
// that enables the required APIs, naming them, and changes nothing; applying it calls
// BatchEnableServices once and polls its operation; the next plan reads the rest, and a
// full up leaves a plan with no change.
func TestUpEnablesAPIs(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{NewProject: true})
	ctx := context.Background()
	e.fake.SetAPI("p", "storage.googleapis.com", true) // on in every new project
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Replan || len(p.Steps) != 1 || p.Steps[0].Action != gke.ActEnable {
		t.Fatalf("plan on a new project:\n%s", printed(p))
	}
	want := "APIs container, artifactregistry, iam, iamcredentials, compute"
	if p.Steps[0].What != want {
		t.Errorf("step = %q, want %q", p.Steps[0].What, want)
	}
	if m := e.fake.Mutations(); len(m) != 0 {
		t.Fatalf("planning changed something: %v", m)
	}
	var out strings.Builder
	if err := p.Apply(ctx, &out); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	if e.fake.Count("google.api.serviceusage.v1.ServiceUsage/BatchEnableServices") != 1 || e.fake.Count("google.longrunning.Operations/GetOperation") < 1 {
		t.Errorf("calls = %v, want one BatchEnableServices and its operation polled", e.fake.Requests())
	}
	for _, a := range gke.RequiredAPIs {
		if !e.fake.APIEnabled("p", a) {
			t.Errorf("%s not enabled", a)
		}
	}
	p, err = gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Replan || p.Steps[0].Action != gke.ActOK || len(p.Steps) < 5 {
		t.Fatalf("plan after enabling:\n%s", printed(p))
	}
	if err := p.Apply(ctx, nil); err != nil {
		t.Fatal(err)
	}
	p, err = gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil || p.Changes() != 0 {
		t.Fatalf("third plan (%v):\n%s", err, printed(p))
	}
}

// TestAPIsWithoutPermission: credentials that may not read the project's services get
// an error naming the roles and the gcloud command, without gRPC's text.
func TestAPIsWithoutPermission(t *testing.T) {
	e := setup(t, "us-central1-a", gketest.Options{NewProject: true})
	e.fake.FailNext("google.api.serviceusage.v1.ServiceUsage/BatchGetServices", status.Error(codes.PermissionDenied, "Permission denied to list services for consumer container [projects/p]"))
	_, err := gke.PlanUp(context.Background(), e.c, e.cfg)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, w := range []string{"permission denied", "roles/serviceusage.serviceUsageAdmin", "gcloud services enable"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not say %q: %s", w, msg)
		}
	}
	if strings.Contains(msg, "rpc error") || strings.Contains(msg, "desc =") {
		t.Errorf("error shows gRPC's text: %s", msg)
	}
}
