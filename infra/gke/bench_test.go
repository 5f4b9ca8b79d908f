package gke_test

import (
	"context"
	"testing"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/kinetic-run/kinetic/infra/gke"
	"github.com/kinetic-run/kinetic/testkit/gketest"
)

// BenchmarkUpNoChange is a second `up` against the fakes: plan (every read, one
// registry HEAD for the runner image) and apply with nothing to do. Target ≤ 2 s.
func BenchmarkUpNoChange(b *testing.B) {
	e := setupB(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := gke.PlanUp(ctx, e.c, e.cfg)
		if err != nil {
			b.Fatal(err)
		}
		if p.Changes() != 0 {
			b.Fatalf("%d changes", p.Changes())
		}
		if err := p.Apply(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(e.fake.Requests()))/float64(b.N), "requests/op")
}

// BenchmarkOneRead is the floor: one GetCluster round trip to the same fake.
func BenchmarkOneRead(b *testing.B) {
	e := setupB(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: "projects/p/locations/us-central1-a/clusters/kinetic-cluster"}); err != nil {
			b.Fatal(err)
		}
	}
}

func setupB(b *testing.B) *env {
	e := setupTB(b, "us-central1-a", gketest.Options{})
	ctx := context.Background()
	p, err := gke.PlanUp(ctx, e.c, e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Apply(ctx, nil); err != nil {
		b.Fatal(err)
	}
	e.fake.Reset()
	return e
}
