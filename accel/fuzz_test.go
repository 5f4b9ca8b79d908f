package accel

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse checks Parse never panics, that whatever it accepts has a canonical name
// which parses back to the same Spec, and that every suggested fix is itself valid.
func FuzzParse(f *testing.F) {
	for _, s := range Catalog() {
		f.Add(s.Name)
	}
	for _, s := range []string{"gpu", "tpu:8", "gpu:3", "l4:2", "a100-80gbx16:spot", "tpu-v5e-2x4", "v4-2x2x2",
		"cpu:+4", "tpu-v3-8", "nvidia-tesla-t4x4", "tpu-v5-lite-podslice-16", "h200", "", ":spot", "tpu-v6e-0x8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		spec, err := Parse(in)
		if err != nil {
			var ue *UnknownError
			if !errors.As(err, &ue) {
				t.Fatalf("Parse(%q) error %T, want *UnknownError", in, err)
			}
			if ue.Input != in {
				t.Fatalf("Parse(%q) error names %q", in, ue.Input)
			}
			for _, s := range ue.Suggestions {
				if _, err := Parse(s); err != nil {
					t.Fatalf("Parse(%q) suggested %q, which fails: %v", in, s, err)
				}
			}
			return
		}
		again, err := Parse(spec.Name)
		if err != nil {
			t.Fatalf("Parse(%q) gave canonical %q, which fails: %v", in, spec.Name, err)
		}
		if diff := cmp.Diff(spec, again); diff != "" {
			t.Fatalf("Parse(%q) not stable through %q (-first +again):\n%s", in, spec.Name, diff)
		}
		if spec.Hosts < 1 || spec.Category() == "" {
			t.Fatalf("Parse(%q) = %+v", in, spec)
		}
	})
}
