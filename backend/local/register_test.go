package local_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
)

// TestRegistered: local is registered, is config's default, runs jobs on this machine,
// and refuses a slice over several hosts.
func TestRegistered(t *testing.T) {
	f, ok := backend.Lookup(local.Name)
	if !ok || !slices.Contains(backend.Names(), local.Name) || !slices.Contains(config.Backends(), local.Name) {
		t.Fatalf("%s is not registered (names %v)", local.Name, backend.Names())
	}
	if config.DefaultBackend() != local.Name {
		t.Errorf("config.DefaultBackend() = %q, want %q", config.DefaultBackend(), local.Name)
	}
	if !backend.SharesFiles(local.Name) {
		t.Error("local does not run on this machine")
	}
	if tr := f.Traits(); tr != (backend.Traits{SharesFiles: true, ThisMachinesHardware: true}) {
		t.Errorf("Traits = %+v: local jobs run here, and it makes no cluster objects", tr)
	}
	pl := f
	for acc, want := range map[string]string{"cpu": "", "l4": "", "tpu-v6e-16": "the local backend runs one host"} {
		sp, err := accel.Parse(acc)
		if err != nil {
			t.Fatal(err)
		}
		h := &job.Handle{Backend: local.Name}
		err = pl.Plan(h, sp, nil)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) || h.Backend != local.Name {
			t.Errorf("Plan(%s) = %v, backend %q; want error %q", acc, err, h.Backend, want)
		}
	}
}
