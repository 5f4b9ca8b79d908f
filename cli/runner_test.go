package cli

import "testing"

// TestRunnerFlags: `kinetic runner` parses the argv pods use (the flags are runner's,
// shared with cmd/kinetic-runner).
func TestRunnerFlags(t *testing.T) {
	var cmd = newRunnerCmd(&Globals{})
	argv := []string{"--store", "gs://b", "--group", "grp-x", "--index-env", "JOB_COMPLETION_INDEX", "--workspace", "/kinetic/work", "--hold", "--member-wait=1m"}
	if err := cmd.ParseFlags(argv); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"store": "gs://b", "group": "grp-x", "workspace": "/kinetic/work", "hold": "true", "member-wait": "1m0s", "job": ""} {
		if f := cmd.Flags().Lookup(name); f == nil || f.Value.String() != want {
			t.Errorf("--%s = %v, want %q", name, f, want)
		}
	}
}
