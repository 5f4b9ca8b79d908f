package gke

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"cloud.google.com/go/iam/admin/apiv1/adminpb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// How Google behaves beyond a request's shape, and how provisioning lives with it:
// an API just enabled refuses calls for a while (waitAPIsReady), a cluster runs one
// operation at a time (whenIdle), and an operation can end DONE with an error that
// leaves its cluster or pool in ERROR (opError; PlanUp and poolStep recreate what is in
// ERROR).

// DefaultAPIWait bounds the wait for newly enabled APIs to answer (Google documents
// "a few minutes").
const DefaultAPIWait = 5 * time.Minute

// busyWait bounds the wait for another operation on the cluster (a cluster's create
// takes up to about 15 minutes, a TPU pool's longer).
const busyWait = 45 * time.Minute

// serviceDisabled reports whether err is Google's refusal of a call to an API that is
// off on the project, or was enabled too recently to answer (403 SERVICE_DISABLED).
func serviceDisabled(err error) bool {
	if err == nil {
		return false
	}
	if reason(err) == "SERVICE_DISABLED" {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "has not been used in project") || strings.Contains(msg, "SERVICE_DISABLED") || strings.Contains(msg, "accessNotConfigured")
}

// reason is the ErrorInfo reason of a gRPC error ("" if none).
func reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}

// waitAPIsReady calls each API just enabled with a read until none answers
// SERVICE_DISABLED, saying so on screen, at most cfg.APIWait; then a clear error.
func (c *Clients) waitAPIsReady(ctx context.Context, cfg *Config, apis []string, pr *progress) error {
	probes := map[string]func(ctx context.Context) error{
		"container.googleapis.com": func(ctx context.Context) error {
			_, err := c.Cluster.GetCluster(ctx, &containerpb.GetClusterRequest{Name: cfg.clusterName()})
			return err
		},
		"artifactregistry.googleapis.com": func(ctx context.Context) error {
			_, err := c.Registry.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: cfg.repoName()})
			return err
		},
		"iam.googleapis.com": func(ctx context.Context) error {
			_, err := c.IAM.GetServiceAccount(ctx, &adminpb.GetServiceAccountRequest{Name: cfg.accountName()})
			return err
		},
		"compute.googleapis.com": func(ctx context.Context) error {
			_, err := c.Compute.Projects.Get(cfg.Project).Context(ctx).Do()
			return err
		},
	}
	deadline := time.Now().Add(cfg.APIWait)
	for _, api := range apis {
		probe := probes[api]
		if probe == nil {
			continue
		}
		said := false
		for {
			err := probe(ctx)
			if !serviceDisabled(err) {
				break // ready: answered (a NotFound is an answer)
			}
			if !said {
				fmt.Fprintf(pr.w, "    … waiting for %s to be ready in project %s (Google takes a few minutes to propagate an API just enabled; at most %s)\n", api, cfg.Project, cfg.APIWait.Round(time.Second))
				said = true
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s was enabled in project %s but still refuses calls after %s (Google can take several minutes to propagate it): run the same command again in a few minutes", api, cfg.Project, cfg.APIWait.Round(time.Second))
			}
			if err := pr.sleep(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

var opNameRE = regexp.MustCompile(`operation-[A-Za-z0-9-]*[A-Za-z0-9]`)

// busyOp reports whether err is GKE's refusal because the cluster runs another
// operation (FAILED_PRECONDITION, CLUSTER_ALREADY_HAS_OPERATION), and that operation's
// name when Google gave it.
func busyOp(err error) (string, bool) {
	if status.Code(err) != codes.FailedPrecondition {
		return "", false
	}
	msg := status.Convert(err).Message()
	if reason(err) != "CLUSTER_ALREADY_HAS_OPERATION" && !strings.Contains(msg, "incompatible operation") && !strings.Contains(msg, "CLUSTER_ALREADY_HAS_OPERATION") {
		return "", false
	}
	return opNameRE.FindString(msg), true
}

// whenIdle makes a call that starts an operation on the cluster; while GKE refuses it
// because another operation runs there (one at a time per cluster), it says so, waits
// for that operation (polling it when its name is known), and calls again, at most
// busyWait.
func (c *Clients) whenIdle(ctx context.Context, cfg *Config, pr *progress, call func() (*containerpb.Operation, error)) (*containerpb.Operation, error) {
	deadline := time.Now().Add(busyWait)
	for {
		op, err := call()
		other, busy := busyOp(err)
		if !busy {
			return op, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster %s has been busy with another operation for %s: see `kinetic status`, then run the command again", cfg.Cluster, busyWait)
		}
		what := "another operation"
		if other != "" {
			what = "operation " + other
		}
		fmt.Fprintf(pr.w, "    … cluster %s is running %s (GKE runs one at a time): waiting for it, then %s\n", cfg.Cluster, what, pr.what)
		if other == "" {
			if err := pr.sleep(ctx); err != nil {
				return nil, err
			}
			continue
		}
		for {
			if err := pr.sleep(ctx); err != nil {
				return nil, err
			}
			o, err := c.Cluster.GetOperation(ctx, &containerpb.GetOperationRequest{Name: cfg.location() + "/operations/" + other})
			if err != nil || o.GetStatus() == containerpb.Operation_DONE || time.Now().After(deadline) {
				break // gone, done, or unreadable: try again
			}
		}
	}
}

var (
	quotaRE    = regexp.MustCompile(`Quota '([A-Za-z0-9_]+)' exceeded\.\s*Limit: ([0-9.]+) in (region|zone) ([a-z0-9-]+)`)
	gkeQuotaRE = regexp.MustCompile(`Insufficient (regional|zonal) quota to satisfy request: resource "([A-Za-z0-9_]+)"`)
)

// OpError is an operation that ended with an error at Google, worded for a person:
// which quota, which zone, what to do.
type OpError struct {
	Operation string
	Message   string // Google's
	Text      string // ours
}

func (e *OpError) Error() string { return e.Text }

// opError words Google's failure message of an operation on what (the cluster or a
// node pool) in cfg's project and zone.
func opError(cfg *Config, op, what, msg string) error {
	text := fmt.Sprintf("operation %s failed: %s", op, msg)
	switch {
	case strings.Contains(msg, "ZONE_RESOURCE_POOL_EXHAUSTED") || strings.Contains(msg, "does not have enough resources available") || strings.Contains(msg, "STOCKOUT"):
		text = fmt.Sprintf("zone %s has no capacity left for %s's machines right now (ZONE_RESOURCE_POOL_EXHAUSTED: a stockout at Google, not your quota): try another zone with --zone, a reservation (--reservation), spot capacity (--spot), or again later. It is left in ERROR: the next `kinetic up` or `pool add` deletes it and creates it again", cfg.Zone, what)
	case quotaRE.MatchString(msg):
		m := quotaRE.FindStringSubmatch(msg)
		text = fmt.Sprintf("%s needs more of quota %s than project %s has in %s %s (limit %s): ask for more at https://console.cloud.google.com/iam-admin/quotas?project=%s (filter by %s), or choose a zone in another region. It is left in ERROR: the next `kinetic up` or `pool add` deletes it and creates it again", what, m[1], cfg.Project, m[3], m[4], m[2], cfg.Project, m[1])
	case gkeQuotaRE.MatchString(msg):
		m := gkeQuotaRE.FindStringSubmatch(msg)
		text = fmt.Sprintf("%s needs more of quota %s than project %s has (%s quota in %s): ask for more at https://console.cloud.google.com/iam-admin/quotas?project=%s (filter by %s), or choose a zone in another region. It is left in ERROR: the next `kinetic up` or `pool add` deletes it and creates it again", what, m[2], cfg.Project, m[1], Region(cfg.Zone), cfg.Project, m[2])
	}
	return &OpError{Operation: op, Message: msg, Text: text}
}

// IsOpError reports whether err is an operation's failure at Google.
func IsOpError(err error) bool {
	var oe *OpError
	return errors.As(err, &oe)
}
