package importrules

import (
	"strings"
	"testing"
)

// TestImportRules checks Rules against the module's real import graph, after proving
// on a made-up graph that the checker fails when it should.
func TestImportRules(t *testing.T) {
	t.Run("checker fails on a synthetic graph", checkFails)
	pkgs := make([]string, len(Rules))
	for i, r := range Rules {
		pkgs[i] = r.Pkg
	}
	g, err := Load("../..", pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		t.Run(short(r.Pkg), func(t *testing.T) {
			v, err := Check(g, r)
			switch {
			case err != nil:
				t.Fatal(err)
			case v != nil && r.Exception != "":
				t.Skipf("known exception: %v\n%s", v, r.Exception)
			case v != nil:
				t.Error(v)
			case r.Exception != "":
				t.Errorf("the rule holds now: remove its exception (%s)", r.Exception)
			}
		})
	}
}

// checkFails: the checker finds a violation in a graph made up for it, and names the
// whole chain.
func checkFails(t *testing.T) {
	g := &Graph{
		Imports: map[string][]string{
			m + "engine":                      {"context", m + "batch/layout", m + "job"},
			m + "batch/layout":                {m + "store", m + "backend/kubernetes/podspec"},
			m + "store":                       {"context"},
			m + "job":                         {"encoding/json"},
			m + "backend/kubernetes/podspec":  {"k8s.io/client-go/kubernetes"},
			"k8s.io/client-go/kubernetes":     {"k8s.io/apimachinery/pkg/runtime"},
			"k8s.io/apimachinery/pkg/runtime": nil,
			"context":                         nil,
			"encoding/json":                   nil,
		},
		Standard: map[string]bool{"context": true, "encoding/json": true},
	}
	for _, c := range []struct {
		name string
		rule Rule
		want string // the chain in the message; "" for none
	}{
		{"client-go", Rule{Pkg: m + "engine", Why: "test", Forbid: Under("k8s.io/client-go")},
			"engine -> batch/layout -> backend/kubernetes/podspec -> k8s.io/client-go/kubernetes"},
		{"a backend", Rule{Pkg: m + "engine", Why: "test", Forbid: Under(m + "backend/kubernetes")},
			"engine -> batch/layout -> backend/kubernetes/podspec"},
		{"a leaf", Rule{Pkg: m + "batch/layout", Why: "test", Forbid: NotStandard()},
			"batch/layout -> backend/kubernetes/podspec"},
		{"batch code in the engine", Rule{Pkg: m + "engine", Why: "test", Forbid: Under(m + "batch")},
			"engine -> batch/layout"},
		{"outside what a leaf may link", Rule{Pkg: m + "batch/layout", Why: "test", Forbid: Outside(m+"store", m+"job")},
			"batch/layout -> backend/kubernetes/podspec"},
		{"a package alone", Rule{Pkg: m + "engine", Why: "test", Forbid: Packages(m + "store").Or(Packages(m + "batch/layout"))},
			"engine -> batch/layout"},
		{"holds", Rule{Pkg: m + "job", Why: "test", Forbid: NotStandard()}, ""},
		{"holds for a package alone, not below it", Rule{Pkg: m + "engine", Why: "test", Forbid: Packages(m+"batch", m+"backend/kubernetes")}, ""},
		{"holds for what a leaf may link", Rule{Pkg: m + "store", Why: "test", Forbid: Outside(m + "job")}, ""},
		{"holds for a prefix only", Rule{Pkg: m + "engine", Why: "test", Forbid: Under("k8s.io/client")}, ""},
	} {
		v, err := Check(g, c.rule)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.want == "" && v != nil:
			t.Errorf("%s: violation %v, want none", c.name, v)
		case c.want != "" && v == nil:
			t.Errorf("%s: no violation, want %s", c.name, c.want)
		case c.want != "" && !strings.Contains(v.Error(), c.want):
			t.Errorf("%s: %q does not name the chain %s", c.name, v.Error(), c.want)
		}
	}
	if _, err := Check(g, Rule{Pkg: m + "nope", Forbid: NotStandard()}); err == nil {
		t.Error("a rule for a package missing from the graph was not an error")
	}
}
