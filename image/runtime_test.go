package image

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRuntimeRequirements(t *testing.T) {
	want := map[string][]string{
		"cpu": {"jax==" + JaxVersion, "jaxlib==" + JaxVersion, "keras==" + KerasVersion, "cloudpickle==" + CloudpickleVersion},
		"gpu": {"jax[cuda12]==" + JaxVersion, "keras==" + KerasVersion, "cloudpickle==" + CloudpickleVersion},
		"tpu": {"jax[tpu]==" + JaxVersion, "keras==" + KerasVersion, "cloudpickle==" + CloudpickleVersion},
	}
	for _, c := range Categories {
		got, err := RuntimeRequirements(c)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want[c], got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c, d)
		}
	}
	if _, err := RuntimeRequirements("fpga"); err == nil || !strings.Contains(err.Error(), "cpu, gpu, tpu") {
		t.Errorf("fpga: %v", err)
	}
	for c, want := range map[string]string{"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"} {
		if got := JAXPlatforms(c); got != want {
			t.Errorf("JAXPlatforms(%s) = %q, want %q", c, got, want)
		}
	}
}

func TestCheckPython(t *testing.T) {
	for _, ok := range []string{"3.10", "3.11", "3.12", "3.13"} {
		if err := CheckPython(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for v, want := range map[string]string{
		"3.9":    "support Python 3.10 to 3.13",
		"3.14":   "the client runs Python 3.14",
		"2.7":    "support Python 3.10 to 3.13",
		"3":      "expected MAJOR.MINOR",
		"3.12.1": "expected MAJOR.MINOR",
		"3.012":  "expected MAJOR.MINOR",
		"":       "expected MAJOR.MINOR",
	} {
		err := CheckPython(v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckPython(%q) = %v, want an error containing %q", v, err, want)
		}
	}
	if got := DefaultBase("3.12"); got != "docker.io/library/python:3.12-slim" {
		t.Errorf("DefaultBase(3.12) = %s", got)
	}
	if got := DefaultBase(""); got != "docker.io/library/python:"+DefaultPython+"-slim" {
		t.Errorf("DefaultBase(\"\") = %s", got)
	}
}
