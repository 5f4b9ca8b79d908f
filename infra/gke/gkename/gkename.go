// Package gkename holds the names `kinetic up` gives what it makes on GKE, so that the
// configuration's defaults (package config, which imports nothing else of Kinetic's)
// and provisioning (infra/gke) agree: a job submitted with only a project and a cluster
// goes to the bucket and the registry `up` made. It imports nothing.
package gkename

import "strings"

const (
	// DefaultCluster is the cluster's name when none is given.
	DefaultCluster = "kinetic-cluster"
	// Repository is the Artifact Registry repository (Docker format) in the zone's region.
	Repository = "kinetic"
)

// Bucket is the store bucket of project: PROJECT-kinetic (one per project, shared by its
// clusters; job ids keep their records apart).
func Bucket(project string) string { return project + "-kinetic" }

// Store is the store URL of project: gs://PROJECT-kinetic.
func Store(project string) string { return "gs://" + Bucket(project) }

// Region is the region of a zone ("us-central1-a" → "us-central1"), "" if not a zone.
func Region(zone string) string {
	i := strings.LastIndexByte(zone, '-')
	if i <= 0 || strings.Count(zone, "-") < 2 {
		return ""
	}
	return zone[:i]
}

// Registry is the Docker path of the repository of project in zone's region:
// REGION-docker.pkg.dev/PROJECT/kinetic ("" when zone is not a zone).
func Registry(project, zone string) string {
	r := Region(zone)
	if r == "" || project == "" {
		return ""
	}
	return r + "-docker.pkg.dev/" + project + "/" + Repository
}
