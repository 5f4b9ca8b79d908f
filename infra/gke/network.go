package gke

import (
	"context"
	"fmt"
	"net/http"

	compute "google.golang.org/api/compute/v1"

	"github.com/kinetic-run/kinetic/infra/gke/gkename"
)

// A cluster goes on the project's `default` VPC network. A project without one (an
// organisation that skips it, or a user who deleted it) gets Kinetic's own, as the
// reference makes one (kinetic/cli/infra/program.py, _create_network): kn-CLUSTER, with
// auto-mode subnetworks (one per region). The reference adds a Cloud Router and NAT for
// its private nodes; ours have public addresses, so they need neither.

// Network is the VPC network up makes for the cluster when the project has no
// `default`: kn-CLUSTER.
func (c *Config) Network() string { return gkename.Repository(c.Cluster) }

// planNetwork is the network a cluster to be created goes on ("" = the project's
// default) and the step that makes it, nil when there is nothing to make.
func (c *Clients) planNetwork(ctx context.Context, cfg *Config) (string, *Step, error) {
	_, err := c.Compute.Networks.Get(cfg.Project, "default").Context(ctx).Do()
	if err == nil {
		return "", nil, nil
	}
	if httpCode(err) != http.StatusNotFound {
		return "", nil, apiErr("read the default network of project "+cfg.Project, err)
	}
	own := cfg.Network()
	what := "network " + own
	_, err = c.Compute.Networks.Get(cfg.Project, own).Context(ctx).Do()
	switch {
	case err == nil:
		return own, &Step{What: what, Action: ActOK, Detail: "the project has no default network"}, nil
	case httpCode(err) != http.StatusNotFound:
		return "", nil, apiErr("read the network "+own+" of project "+cfg.Project, err)
	}
	return own, &Step{What: what, Action: ActCreate, Detail: "the project has no default network: one of Kinetic's own, auto-mode subnetworks, as the reference makes",
		apply: func(ctx context.Context, pr *progress) error {
			op, err := c.Compute.Networks.Insert(cfg.Project, &compute.Network{Name: own, AutoCreateSubnetworks: true,
				Description: "Kinetic cluster " + cfg.Cluster + " (kinetic up): the project has no default network"}).Context(ctx).Do()
			if httpCode(err) == http.StatusConflict {
				return nil
			}
			if err != nil {
				return apiErr("create the network "+own, err)
			}
			return c.waitGlobalOp(ctx, cfg, op, pr)
		}}, nil
}

// planNetworkDown is the step that deletes the network up made (after the cluster),
// nil when there is none.
func (c *Clients) planNetworkDown(ctx context.Context, cfg *Config) (*Step, error) {
	own := cfg.Network()
	_, err := c.Compute.Networks.Get(cfg.Project, own).Context(ctx).Do()
	if httpCode(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apiErr("read the network "+own+" of project "+cfg.Project, err)
	}
	return &Step{What: "network " + own, Action: ActDelete, Detail: "up made it: the project has no default network",
		apply: func(ctx context.Context, pr *progress) error {
			op, err := c.Compute.Networks.Delete(cfg.Project, own).Context(ctx).Do()
			if httpCode(err) == http.StatusNotFound {
				return nil
			}
			if err != nil {
				_, msg := describe(err)
				return fmt.Errorf("delete the network %s: %s: if firewall rules GKE made are left on it, `gcloud compute firewall-rules list --filter network=%s --project %s` lists them; delete them, then run down again", own, msg, own, cfg.Project)
			}
			return c.waitGlobalOp(ctx, cfg, op, pr)
		}}, nil
}

// waitGlobalOp polls a Compute Engine global operation until it is DONE.
func (c *Clients) waitGlobalOp(ctx context.Context, cfg *Config, op *compute.Operation, pr *progress) error {
	pr.op = op.Name
	for op.Status != "DONE" {
		pr.tick(op.Status)
		if err := pr.sleep(ctx); err != nil {
			return err
		}
		var err error
		if op, err = c.Compute.GlobalOperations.Get(cfg.Project, op.Name).Context(ctx).Do(); err != nil {
			return apiErr("operation "+pr.op, err)
		}
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		return opError(cfg, op.Name, pr.what, op.Error.Errors[0].Message)
	}
	return nil
}
