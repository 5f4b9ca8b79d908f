package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra"
)

// upK8sOptions are the flags of `kinetic up --backend k8s` (and what `kinetic init`
// passes when joining a cluster).
type upK8sOptions struct {
	Namespace, Registry, Store, Context string
	// Profile is the profile to write ("" = --profile, the active one, else default).
	Profile      string
	Yes, Preview bool
}

// upK8s is `kinetic up --backend k8s`: plan, print, ask, apply, write the profile, check.
func upK8s(ctx context.Context, c *provision.Call, o upK8sOptions) error {
	profile := c.Profile
	if o.Profile != "" {
		profile = o.Profile
	}
	t, cfg, err := upK8sTarget(profile, o)
	if err != nil {
		return err
	}
	out := c.Err
	start := time.Now()
	plan, err := infra.PlanUp(ctx, t)
	if err != nil {
		return err
	}
	prof, err := planK8sProfile(profile, t, cfg)
	if err != nil {
		return err
	}
	plan.Print(out)
	prof.print(out)
	changes := plan.Changes() + prof.changes()
	if changes == 0 {
		fmt.Fprintf(out, "nothing to change: the cluster is ready (%.1fs; `kinetic doctor` checks the store from a pod)\n", time.Since(start).Seconds())
		return nil
	}
	if o.Preview {
		fmt.Fprintf(out, "preview: %d change(s) planned, nothing applied (run again with -y to apply)\n", changes)
		return nil
	}
	if !o.Yes {
		if err := confirmK8s(c, changes); err != nil {
			return err
		}
	}
	if err := plan.Apply(ctx, out); err != nil {
		return err
	}
	if err := prof.write(out, o.Profile != ""); err != nil {
		return err
	}
	return upChecks(ctx, c, t, plan.RunnerImage, start)
}

// upK8sTarget is the cluster up prepares: the configuration of profile (when it
// exists) with o's flags on top.
func upK8sTarget(profile string, o upK8sOptions) (*infra.Target, *config.Resolved, error) {
	args := map[config.Key]string{config.Namespace: o.Namespace, config.ImageRegistry: o.Registry, config.Store: o.Store, config.KubeContext: o.Context}
	for k, v := range args {
		if v == "" {
			delete(args, k)
		}
	}
	t, cfg, kerr, err := k8sTarget(provision.ExistingProfile(profile), args)
	if err == nil {
		err = kerr
	}
	return t, cfg, err
}

// confirmK8s asks before applying changes, on a terminal only.
func confirmK8s(c *provision.Call, changes int) error {
	if !c.Terminal {
		return fmt.Errorf("%d change(s) planned and no terminal to ask on: nothing applied; run again with -y to apply (or --preview to only print the plan)", changes)
	}
	ok, err := provision.NewPrompter(c.In, c.Err).Confirm(fmt.Sprintf("apply %d change(s)?", changes))
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("nothing applied")
	}
	return nil
}

// k8sProfile is the profile `up --backend k8s` writes.
type k8sProfile struct {
	name, path, action string // action: ok, create, update
	changed            []string
	merged             config.Profile
}

// planK8sProfile plans the profile (profile, the active one, else default) for t.
func planK8sProfile(profile string, t *infra.Target, cfg *config.Resolved) (*k8sProfile, error) {
	path := config.ProfilesPath(nil)
	f, err := config.LoadProfiles(path)
	if err != nil {
		return nil, err
	}
	name, _ := config.ActiveName(f, profile, nil, path)
	if name == "" {
		name = "default"
	}
	want := k8sProfileWant(t, cfg)
	old, exists := f.Profiles[name]
	p := &k8sProfile{name: name, path: path, action: "ok", merged: provision.MergeProfile(old, want)}
	for k, v := range want {
		if old[k] != v {
			p.changed = append(p.changed, k+"="+v)
		}
	}
	sort.Strings(p.changed)
	if !exists {
		p.action = "create"
	} else if len(p.changed) > 0 {
		p.action = "update"
	}
	return p, nil
}

// k8sProfileWant is what the profile of t holds.
func k8sProfileWant(t *infra.Target, cfg *config.Resolved) config.Profile {
	want := config.Profile{
		string(config.Backend): kubernetes.K8sName, string(kubernetes.KeyClusterType): "generic",
		string(config.Namespace): t.Namespace, string(config.Store): t.Store,
		string(config.ImageRegistry): t.Registry, string(config.KubeContext): t.Context,
	}
	// A kubeconfig that came from $KUBECONFIG stays there: written into the
	// profile it would shadow the variable (the profile wins over it).
	if t.Kubeconfig != "" && cfg.Source(kubernetes.KeyKubeconfig) != "env KUBECONFIG" {
		if abs, err := filepath.Abs(t.Kubeconfig); err == nil {
			want[string(kubernetes.KeyKubeconfig)] = abs
		}
	}
	for k, v := range want {
		if v == "" {
			delete(want, k)
		}
	}
	return want
}

func (p *k8sProfile) changes() int {
	if p.action == "ok" {
		return 0
	}
	return 1
}

func (p *k8sProfile) print(out io.Writer) {
	mark := map[string]string{"ok": "=", "create": "+", "update": "~"}[p.action]
	detail := ""
	if len(p.changed) > 0 {
		detail = " (" + strings.Join(p.changed, ", ") + ")"
	}
	fmt.Fprintf(out, "  %s %-8s profile %s in %s%s\n", mark, p.action, p.name, p.path, detail)
}

// write writes the profile when it changes, made current when the file has none or
// current (init names the profile it writes).
func (p *k8sProfile) write(out io.Writer, current bool) error {
	if p.action == "ok" {
		return nil
	}
	if err := provision.PutProfile(p.path, p.name, p.merged, current); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %s profile %s\n", p.action, p.name)
	return nil
}

// upChecks checks the store from here and from a pod after a change.
func upChecks(ctx context.Context, c *provision.Call, t *infra.Target, runnerImage string, start time.Time) error {
	out := c.Err
	if err := infra.CheckStoreHere(ctx, t.Store); err != nil {
		return fmt.Errorf("store %s from here: %w", t.Store, err)
	}
	fmt.Fprintf(out, "✓ store %s: read and write from here\n", t.Store)
	if err := infra.CheckStoreFromPod(ctx, t, runnerImage); err != nil {
		return fmt.Errorf("store %s from a pod: %w (see `kinetic doctor`)", t.Store, err)
	}
	fmt.Fprintf(out, "✓ store %s: read and write from a pod in %s\n", t.Store, t.Namespace)
	fmt.Fprintf(out, "ready in %.1fs: `kinetic run` submits to namespace %s\n", time.Since(start).Seconds(), t.Namespace)
	return nil
}
