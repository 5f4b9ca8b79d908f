package local

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/config/configtest"
)

// TestSettings: the local backend's settings resolve as config's own keys do, with the
// defaults, sources and forms of old (they lived in config before backends declared
// their own), and `kinetic config show` lists them with where each value came from.
func TestSettings(t *testing.T) {
	r, err := configtest.Resolve(t, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Entry{
		{Key: KeySlots, Value: strconv.Itoa(runtime.NumCPU()), Source: "default (CPUs)"},
		{Key: KeyWarm, Value: "true", Source: "default"},
		{Key: KeyBatchIsolation, Value: "worker", Source: "default"},
		{Key: KeyWarmIdle, Value: "10m0s", Source: "default"},
	}
	if d := cmp.Diff(want, configtest.Owned(r, owner)); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	configtest.Layers(t, KeySlots, "1", "2", "3")
	configtest.Layers(t, KeyWarm, "false", "true", "false")
	configtest.Layers(t, KeyBatchIsolation, "process", "job", "worker")
	configtest.Layers(t, KeyWarmIdle, "1m0s", "2m0s", "3m0s")

	for _, c := range []struct {
		env       map[string]string
		key       config.Key
		want, bad string
	}{
		{env: map[string]string{"KINETIC_WARM": "0"}, key: KeyWarm, want: "false"},
		{env: map[string]string{"KINETIC_WARM_IDLE": "90s"}, key: KeyWarmIdle, want: "1m30s"},
		{env: map[string]string{"KINETIC_LOCAL_SLOTS": "3"}, key: KeySlots, want: "3"},
		{env: map[string]string{"KINETIC_LOCAL_SLOTS": "0"}, key: KeySlots, bad: "KINETIC_LOCAL_SLOTS"},
		{env: map[string]string{"KINETIC_BATCH_ISOLATION": "thread"}, key: KeyBatchIsolation, bad: "worker, process, job"},
	} {
		r, err := configtest.Resolve(t, c.env, nil, nil)
		switch {
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%v: Resolve = %v, want an error naming %q", c.env, err, c.bad)
		case c.bad == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.bad == "" && r.Get(c.key) != c.want:
			t.Errorf("%v: %s = %q, want %q", c.env, c.key, r.Get(c.key), c.want)
		}
	}
}
