package nobackend

import (
	"go/token"
	"strings"
	"testing"
)

// TestNoBackendNamed: cli, config, job and engine name no backend in their non-test
// files, after proving on made-up files that the check finds what it should.
func TestNoBackendNamed(t *testing.T) {
	t.Run("the check finds an import and a name", checkFinds)
	found, err := CheckDirs("../..", "cli", "config", "job", "engine")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if why, ok := allowed[f.Pos.Filename+" "+f.What]; ok {
			t.Logf("allowed: %s (%s)", f, why)
			continue
		}
		t.Error(f)
	}
}

// allowed are strings that spell a backend's name and mean something else, by file and
// finding.
var allowed = map[string]string{
	`cli/jobs.go names backend "k8s"`: "the flag --k8s of jobs cleanup, the reference's cleanup(k8s=True): a parameter's name, not a backend",
}

func checkFinds(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"an import", `package x; import _ "` + Module + `/backend/kubernetes"`, []string{"imports " + Module + "/backend/kubernetes"}},
		{"a subpackage", `package x; import "` + Module + `/infra/gke/gkeconn"`, []string{"imports " + Module + "/infra/gke/gkeconn"}},
		{"a name", `package x; func f(b string) bool { return b == "gke" || b == ` + "`local`" + ` }`, []string{`names backend "gke"`, "names backend `local`"}},
		{"a name in a table", `package x; var m = map[string]int{"pathways": 1}`, []string{`names backend "pathways"`}},
		{"nothing", `package x; import "` + Module + `/backend"; var s = "gke cluster"; var k = "k8s_name"`, nil},
	} {
		found, err := CheckFile(token.NewFileSet(), "x.go", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, f := range found {
			got = append(got, f.What)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: found %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSlurmContained: the product's Go code outside backend/slurm knows Slurm only by
// the blank import that registers it (issue 48: a backend written inside its own
// package plus registration). The engine plans its jobs from its traits
// (backend.Traits: SharesFiles without ThisMachinesHardware), the CLI's setup commands
// reach it through backend/provision, and its settings are declared in its package.
func TestSlurmContained(t *testing.T) {
	found, err := Mentions("../..", "backend/slurm", "slurm")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.Pos.Filename+": "+f.What)
	}
	want := []string{"cmd/kinetic/main.go: imports " + Module + "/backend/slurm"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Go code outside backend/slurm that names Slurm:\n%s\nwant only:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The check finds what it should: the Kubernetes backend is named far and wide.
	if k, err := Mentions("../..", "backend/kubernetes", "kubernetes"); err != nil || len(k) < 5 {
		t.Errorf("the check found %d mentions of the Kubernetes backend (%v): it finds nothing", len(k), err)
	}
}
