package plan

import (
	"os"
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
	"github.com/kinetic-run/kinetic/backend/kubernetes"
	"github.com/kinetic-run/kinetic/backend/local"
	"github.com/kinetic-run/kinetic/config"
)

// TestPlacementBackend: the registered factories settle which backend runs an accelerator.
func TestPlacementBackend(t *testing.T) {
	cases := []struct {
		backend, acc, want, err string
	}{
		{kubernetes.GKEName, "tpu-v6e-16", kubernetes.PathwaysName, ""},
		{kubernetes.K8sName, "tpu-v6e-8", kubernetes.PathwaysName, ""},
		{kubernetes.PathwaysName, "tpu-v6e-16", kubernetes.PathwaysName, ""},
		{kubernetes.GKEName, "tpu-v5litepod-4", kubernetes.GKEName, ""},
		{kubernetes.GKEName, "l4", kubernetes.GKEName, ""},
		{kubernetes.PathwaysName, "tpu-v5litepod-2x4", kubernetes.PathwaysName, ""}, // explicit: a one-host group
		{local.Name, "cpu", local.Name, ""},
		{local.Name, "tpu-v6e-16", "", "the local backend runs one host"},
	}
	for _, c := range cases {
		t.Run(c.backend+"/"+c.acc, func(t *testing.T) {
			sp, err := accel.Parse(c.acc)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Resolve(config.Options{Args: map[config.Key]string{config.Backend: c.backend, config.Project: "p", config.Store: "mem://", kubernetes.KeyKubeconfig: os.DevNull},
				Getenv: func(string) string { return "" }, ProfilesFile: os.DevNull})
			if err != nil {
				t.Fatal(err)
			}
			h, err := Backend(cfg, sp)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || h.Backend != c.want {
				t.Errorf("got %+v %v, want backend %q", h, err, c.want)
			}
		})
	}
}
