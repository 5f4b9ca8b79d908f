package layout

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

const secretValue = "s3cr3t-value-of-the-test"

// derivedBatch writes a batch of two derived children whose template captures TOKEN.
func derivedBatch(t *testing.T, st *store.Store, gid string, env map[string]string) *Template {
	t.Helper()
	id := job.ChildID(gid, 0)
	tmpl := &Template{Handle: &job.Handle{JobID: id, Store: "mem://"},
		Spec: &job.Spec{Version: job.SpecVersion, Kind: job.KindPickle, JobID: id, EnvNames: []string{"TOKEN"}}}
	if err := WriteDerived(context.Background(), st, gid, tmpl, env, [][]byte{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestDerivedEnvOnlyInEnvJSON: a batch's captured values are written to groups/G/env.json,
// never into template.json (read by every listing); a child gets them in its own
// env.json when its pod writes it.
func TestDerivedEnvOnlyInEnvJSON(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := job.NewGroupID()
	derivedBatch(t, st, gid, map[string]string{"TOKEN": secretValue})

	raw, err := st.Get(ctx, store.GroupTemplateKey(gid))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secretValue)) || bytes.Contains(raw, []byte(`"env"`)) {
		t.Fatalf("template.json holds the captured values: %s", raw)
	}
	tmpl, err := ReadTemplate(ctx, st, gid)
	if err != nil {
		t.Fatal(err)
	}
	if env, err := ReadEnv(ctx, st, gid, tmpl); err != nil || env["TOKEN"] != secretValue {
		t.Fatalf("ReadEnv: %v, %v", env, err)
	}
	id, err := Materialize(ctx, st, gid, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := childEnv(t, st, id); got["TOKEN"] != secretValue {
		t.Fatalf("the child's env.json: %v", got)
	}
}

// TestDerivedEnvOldTemplate: a template written by an older version, with the values in
// its "env" field, still gives them to its children (read-compat).
func TestDerivedEnvOldTemplate(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gid := job.NewGroupID()
	tmpl := derivedBatch(t, st, gid, nil)
	old, _ := json.Marshal(map[string]any{"handle": tmpl.Handle, "spec": tmpl.Spec, "env": map[string]string{"TOKEN": secretValue}})
	if err := st.Put(ctx, store.GroupTemplateKey(gid), old); err != nil {
		t.Fatal(err)
	}
	read, err := ReadTemplate(ctx, st, gid)
	if err != nil {
		t.Fatal(err)
	}
	if env, err := ReadEnv(ctx, st, gid, read); err != nil || env["TOKEN"] != secretValue {
		t.Fatalf("ReadEnv of an old template: %v, %v", env, err)
	}
	id, err := Materialize(ctx, st, gid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := childEnv(t, st, id); got["TOKEN"] != secretValue {
		t.Fatalf("the child's env.json: %v", got)
	}
}

// TestDerivedEnvMissing: a batch that captured variables but whose env.json is gone or
// damaged says so in plain words instead of running its children without them.
func TestDerivedEnvMissing(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		name string
		env  []byte // nil: no env.json
		want string
	}{
		{"missing", nil, "env.json is missing (its template says its inputs capture TOKEN); `kinetic batch cleanup"},
		{"damaged", []byte(`["not", "a", "map"]`), "env.json does not hold what it should"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gid := job.NewGroupID()
			tmpl := derivedBatch(t, st, gid, nil)
			if tc.env != nil {
				if err := st.Put(ctx, store.GroupEnvKey(gid), tc.env); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadEnv(ctx, st, gid, tmpl)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "unmarshal") {
				t.Fatalf("ReadEnv: %v, want %q", err, tc.want)
			}
		})
	}
}

func childEnv(t *testing.T, st *store.Store, id string) map[string]string {
	t.Helper()
	raw, err := st.Get(context.Background(), store.EnvKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	return env
}
