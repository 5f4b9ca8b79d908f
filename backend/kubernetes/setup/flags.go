package setup

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

// flag is one flag the provisioner reads.
type flag struct {
	name  string
	value any // "" (string), 0 (int) or false (bool): the default
	usage string
	// required: the command refuses to run without it; forGKE: refused with another
	// backend (provision.ForAnnotation).
	required, forGKE bool
}

func (f flag) define(fs *pflag.FlagSet) {
	switch v := f.value.(type) {
	case int:
		fs.Int(f.name, v, f.usage)
	case bool:
		fs.Bool(f.name, v, f.usage)
	default:
		fs.String(f.name, "", f.usage)
	}
	if f.required {
		fs.SetAnnotation(f.name, cobra.BashCompOneRequiredFlag, []string{"true"})
	}
	if f.forGKE {
		fs.SetAnnotation(f.name, provision.ForAnnotation, []string{"GKE", kubernetes.GKEName})
	}
}

// keyFlag is the flag of configuration key k (--project, --zone, --cluster).
func keyFlag(k config.Key) flag {
	return flag{name: string(k), value: "", usage: k.Help() + " (env " + k.EnvVar() + ")"}
}

// gkeWhere are the flags naming the GKE cluster.
var gkeWhere = []flag{keyFlag(config.Project), keyFlag(config.Zone), keyFlag(config.Cluster)}

func with(fs ...[]flag) []flag {
	var all []flag
	for _, f := range fs {
		all = append(all, f...)
	}
	return all
}

// flagTable are the flags of each command.
var flagTable = map[string][]flag{
	provision.CmdUp: with([]flag{
		{name: "accelerator", value: "", usage: "GKE: also make a node pool for this accelerator, as pool add does (e.g. gpu-l4, tpu-v6e-8)"},
		{name: "min-nodes", value: 0, usage: "GKE: fewest nodes the autoscaler keeps in the --accelerator pool"},
		{name: "write-kubeconfig", value: false, usage: "GKE: also add the cluster's context (gke_PROJECT_ZONE_CLUSTER) to the kubeconfig for kubectl, made current (kinetic itself needs none)"},
		{name: "force-destroy", value: false, usage: "GKE: let a later kinetic down delete the store bucket with every job record and output (kept in the profile as force_destroy)"},
		{name: "no-force-destroy", value: false, usage: "GKE: keep the store bucket at kinetic down (force_destroy=false in the profile; the default)"},
		{name: "profile-name", value: "", usage: "GKE: the profile to write and make current (default: the cluster's name)"},
		{name: "namespace", value: "", usage: "namespace for jobs (default: the profile's, else default)"},
		{name: "registry", value: "", usage: "registry for the runner image and bundled images, HOST/PATH, pullable by the nodes (image_registry)"},
		{name: "store", value: "", usage: "store URL reachable from the pods: gs://BUCKET or s3://BUCKET"},
		{name: "context", value: "", usage: "kubeconfig context (default: the current one)"},
	}, gkeWhere),
	provision.CmdDown: with(gkeWhere, []flag{
		{name: "force-destroy", value: false, usage: "also delete the store bucket and everything in it (env KINETIC_FORCE_DESTROY)"},
		{name: "store", value: "", usage: "the store's gs:// URL (default: the profile's, else gs://PROJECT-kn-CLUSTER-jobs)"},
	}),
	provision.CmdStatus: gkeWhere,
	provision.CmdPoolAdd: with(gkeWhere, []flag{
		{name: "accelerator", value: "", usage: "accelerator, e.g. gpu-l4, gpu-a100x8, tpu-v6e-16 (see: kinetic accelerators)", required: true},
		{name: "name", value: "", usage: "pool name (default: the accelerator's, -spot for spot)"},
		{name: "min-nodes", value: 0, usage: "fewest nodes the autoscaler keeps"},
		{name: "max-nodes", value: 0, usage: "most nodes (default: 1, or a multi-host slice's hosts)"},
		{name: "spot", value: false, usage: "spot VMs (cheaper, may be preempted)"},
		{name: "reservation", value: "", usage: "consume this Compute Engine reservation (env KINETIC_RESERVATION)"},
	}),
	provision.CmdPoolList:   gkeWhere,
	provision.CmdPoolRemove: gkeWhere,
	provision.CmdInit: {
		{name: "context", value: "", usage: "k8s: the kubeconfig context to join (default: the current one)"},
		{name: "namespace", value: "", usage: "k8s: namespace for jobs (default: default)"},
		{name: "registry", value: "", usage: "k8s: registry the nodes pull from, HOST/PATH (image_registry)"},
		{name: "store", value: "", usage: "k8s: store reachable from pods, gs://BUCKET or s3://BUCKET"},
		{name: "project", value: "", usage: "gke: Google Cloud project (default: the one gcloud uses)"},
		{name: "zone", value: "", usage: "gke: zone of the cluster"},
		{name: "cluster", value: "", usage: "gke: cluster name (default: kinetic-cluster)"},
		{name: "join", value: false, usage: "gke: join the existing cluster --project/--zone/--cluster (write its profile; create nothing, no kubeconfig needed)", forGKE: true},
	},
	provision.CmdAccelerators: gkeWhere,
}
