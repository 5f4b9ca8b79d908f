package engine

import (
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/accel"
)

func TestBackendForAccelerator(t *testing.T) {
	cases := []struct {
		backend, acc, want, err string
	}{
		{"gke", "tpu-v6e-16", "pathways", ""},
		{"k8s", "tpu-v6e-8", "pathways", ""},
		{"pathways", "tpu-v6e-16", "pathways", ""},
		{"gke", "tpu-v5litepod-4", "gke", ""},
		{"gke", "l4", "gke", ""},
		{"pathways", "tpu-v5litepod-2x4", "pathways", ""}, // explicit: a one-host group
		{"local", "cpu", "local", ""},
		{"local", "tpu-v6e-16", "", "the local backend runs one host"},
	}
	for _, c := range cases {
		t.Run(c.backend+"/"+c.acc, func(t *testing.T) {
			sp, err := accel.Parse(c.acc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := backendForAccelerator(c.backend, sp)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %q %v, want %q", got, err, c.want)
			}
		})
	}
}
