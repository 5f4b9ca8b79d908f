package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/config/backendnames"
)

// The backends of the kinetic binary: config accepts the registered names, and no backend
// is linked into config's tests (they import config).
func init() {
	for _, n := range []string{"local", "gke", "k8s", "pathways"} {
		backendnames.Add(n)
	}
}

// The defaults the kinetic binary's backends give config's keys (backend/local: backend
// local; backend/kubernetes: with a project set, backend gke with
// up's bucket and repository), declared by the tests in their words, so the resolution
// order around them is tested here; backend/kubernetes/setup's TestGKEDefaults checks
// the real declarations.
func init() {
	DeclareDefault(KeyDefault{Key: Backend, Owner: "backend local", Value: "local"})
	chosen := func(e Entry) bool {
		return e.Value != "" && (e.Source == SourceArgument || e.Source == "env KINETIC_PROJECT" ||
			e.Source == "env GOOGLE_CLOUD_PROJECT" || strings.HasPrefix(e.Source, "profile "))
	}
	onGKE := func(prev map[Key]Entry) bool {
		b := prev[Backend].Value
		return (b == "gke" || b == "pathways") && prev[Project].Value != ""
	}
	DeclareDefault(KeyDefault{Key: Backend, Owner: "backend kubernetes", Derive: func(prev map[Key]Entry) (string, string) {
		if p := prev[Project]; chosen(p) {
			return "gke", "default: project set (" + p.Source + ")"
		}
		return "", ""
	}})
	DeclareDefault(KeyDefault{Key: Store, Owner: "backend kubernetes", Derive: func(prev map[Key]Entry) (string, string) {
		if !onGKE(prev) {
			return "", ""
		}
		p, c := prev[Project].Value, prev[Cluster].Value
		return "gs://" + p + "-kn-" + c + "-jobs", "default: the bucket `kinetic up` makes for cluster " + c + " of project " + p
	}})
	DeclareDefault(KeyDefault{Key: ImageRegistry, Owner: "backend kubernetes", Derive: func(prev map[Key]Entry) (string, string) {
		z := prev[Zone].Value
		if !onGKE(prev) || strings.Count(z, "-") != 2 {
			return "", ""
		}
		region := z[:strings.LastIndex(z, "-")]
		p, c := prev[Project].Value, prev[Cluster].Value
		return region + "-docker.pkg.dev/" + p + "/kn-" + c, "default: the repository `kinetic up` makes for cluster " + c + " of project " + p + " in " + region
	}})
}

// Settings a backend would declare, declared by the tests (config's tests link no
// backend): another tool's variable as fallback, a default with its reason, checks.
var (
	widgetConfig = Declare(Setting{Key: "widget_config", Owner: "backend widget", Env: "WIDGETCONFIG",
		Doc: "widget config file"})
	widgetKind = Declare(Setting{Key: "widget_kind", Owner: "backend widget", Check: OneOf("round", "square"),
		Doc: "kind of widget"})
	widgetGrace = Declare(Setting{Key: "widget_grace", Owner: "backend widget", Default: "10m", Check: CheckDuration,
		Doc: "how long a widget may wait"})
	widgetSlots = Declare(Setting{Key: "widget_slots", Owner: "backend widget", Default: "4", DefaultWhy: "CPUs", Check: CheckPositiveInt,
		Doc: "widgets at once"})
)

// env is a fake environment for Options.Getenv, so tests never see the real one.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// writeFile writes content to a fresh profiles file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// twoProfiles is a reference-style file with an active profile, plus one of our keys.
const twoProfiles = `{
  "current": "dev",
  "profiles": {
    "dev":  {"project": "p-dev", "zone": "europe-west4-a", "cluster": "c-dev", "namespace": "ns-dev", "backend": "gke"},
    "prod": {"project": "p-prod", "zone": "us-east5-b", "cluster": "c-prod", "namespace": null}
  }
}`
