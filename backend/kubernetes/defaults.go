package kubernetes

import (
	"strings"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/infra/gke/gkename"
)

// The defaults the Kubernetes backends give config's own keys (config.DeclareDefault),
// as the reference configures GKE: a project, a zone and a cluster, GKE implied, with
// the bucket and repository `kinetic up` makes for them.
func init() {
	config.DeclareDefault(config.KeyDefault{Key: config.Backend, Owner: owner, Derive: gkeBackend})
	config.DeclareDefault(config.KeyDefault{Key: config.Store, Owner: owner, Derive: gkeStore})
	config.DeclareDefault(config.KeyDefault{Key: config.ImageRegistry, Owner: owner, Derive: gkeRegistry})
}

// projectChosen reports whether a project was set: by argument, KINETIC_PROJECT, a
// profile or GOOGLE_CLOUD_PROJECT (the reference reads it after KINETIC_PROJECT and the
// profile, and any project it finds means GKE: issue 44). The backend's source then
// names which, so every error the choice causes can say why (docs/configuration.md).
func projectChosen(e config.Entry) bool {
	return e.Value != "" && (e.Source == config.SourceArgument || e.Source == "env "+config.Project.EnvVar() ||
		e.Source == "env GOOGLE_CLOUD_PROJECT" || strings.HasPrefix(e.Source, "profile "))
}

// gkeBackend: with a project configured for Kinetic and no backend set anywhere, jobs
// go to GKE (the reference's configuration: a project, zone and cluster, GKE implied).
func gkeBackend(prev map[config.Key]config.Entry) (string, string) {
	p := prev[config.Project]
	if !projectChosen(p) {
		return "", ""
	}
	return GKEName, "default: project set (" + p.Source + ")"
}

// onGKE reports whether the backend resolved to a GKE one with a project.
func onGKE(prev map[config.Key]config.Entry) bool {
	return IsGKE(prev[config.Backend].Value) && prev[config.Project].Value != ""
}

// gkeStore: on GKE with a project and no store set, the bucket `kinetic up` makes for it.
func gkeStore(prev map[config.Key]config.Entry) (string, string) {
	if !onGKE(prev) {
		return "", ""
	}
	p, c := prev[config.Project].Value, prev[config.Cluster].Value
	return gkename.Store(p, c), "default: the bucket `kinetic up` makes for cluster " + c + " of project " + p
}

// gkeRegistry: on GKE with a project and zone and no registry set, the repository
// `kinetic up` makes for them.
func gkeRegistry(prev map[config.Key]config.Entry) (string, string) {
	if !onGKE(prev) {
		return "", ""
	}
	r := gkename.Registry(prev[config.Project].Value, prev[config.Zone].Value, prev[config.Cluster].Value)
	if r == "" {
		return "", ""
	}
	return r, "default: the repository `kinetic up` makes for cluster " + prev[config.Cluster].Value + " of project " + prev[config.Project].Value + " in " + gkename.Region(prev[config.Zone].Value)
}
