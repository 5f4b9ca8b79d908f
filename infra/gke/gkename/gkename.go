// Package gkename holds the names `kinetic up` gives what it makes on GKE, so that the
// configuration's defaults (package config, which imports nothing else of Kinetic's)
// and provisioning (infra/gke) agree: a job submitted with only a project and a cluster
// goes to the bucket and the registry `up` made. It imports nothing but the standard
// library.
//
// The names are per cluster, as the reference's (keras-team/kinetic,
// kinetic/cli/infra/program.py): bucket PROJECT-kn-CLUSTER-jobs, Artifact Registry
// repository kn-CLUSTER, service accounts kn-CLUSTER-…. So two clusters in one project
// share nothing `down` deletes, and users of the reference find their resources.
package gkename

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const (
	// DefaultCluster is the cluster's name when none is given.
	DefaultCluster = "kinetic-cluster"
	// Prefix starts the names of what belongs to one cluster: kn-CLUSTER.
	Prefix = "kn-"
)

func orDefault(cluster string) string {
	if cluster == "" {
		return DefaultCluster
	}
	return cluster
}

// Bucket is the store bucket of a cluster: PROJECT-kn-CLUSTER-jobs (the reference's
// jobs bucket).
func Bucket(project, cluster string) string {
	return project + "-" + Prefix + orDefault(cluster) + "-jobs"
}

// Store is the store URL of a cluster: gs://PROJECT-kn-CLUSTER-jobs.
func Store(project, cluster string) string { return "gs://" + Bucket(project, cluster) }

// Repository is the Artifact Registry repository (Docker format) of a cluster:
// kn-CLUSTER.
func Repository(cluster string) string { return Prefix + orDefault(cluster) }

// AccountID is the Google service account of a cluster's job pods: kn-CLUSTER-jobs.
// Google allows 6 to 30 characters: a longer one keeps the start of the cluster's
// name and 6 hex digits of its SHA-256, so two long names stay apart.
func AccountID(cluster string) string {
	cluster = orDefault(cluster)
	id := Prefix + cluster + "-jobs"
	if len(id) <= 30 {
		return id
	}
	sum := sha256.Sum256([]byte(cluster))
	keep := strings.TrimRight(cluster[:30-len(Prefix)-len("-jobs")-7], "-")
	return Prefix + keep + "-" + hex.EncodeToString(sum[:3]) + "-jobs"
}

// Region is the region of a zone ("us-central1-a" → "us-central1"), "" if not a zone.
func Region(zone string) string {
	i := strings.LastIndexByte(zone, '-')
	if i <= 0 || strings.Count(zone, "-") < 2 {
		return ""
	}
	return zone[:i]
}

// Registry is the Docker path of a cluster's repository in zone's region:
// REGION-docker.pkg.dev/PROJECT/kn-CLUSTER ("" when zone is not a zone).
func Registry(project, zone, cluster string) string {
	r := Region(zone)
	if r == "" || project == "" {
		return ""
	}
	return r + "-docker.pkg.dev/" + project + "/" + Repository(cluster)
}
