package config

import (
	"strings"
	"testing"
)

// TestDeclareRefuses: a key with two owners (config's own, or declared twice), or a
// setting without an owner or a doc, is a programming error caught at start-up.
func TestDeclareRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Setting
		want string
	}{
		{"config's own key", Setting{Key: Zone, Owner: "backend x", Doc: "d"}, "declared already (by config)"},
		{"declared twice", Setting{Key: widgetGrace, Owner: "backend x", Doc: "d"}, "declared already (by backend widget)"},
		{"no owner", Setting{Key: "x_y", Doc: "d"}, "an owner"},
		{"not a key", Setting{Key: "X-Y", Owner: "backend x", Doc: "d"}, "lower_case"},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("%s: Declare panicked with %v, want %q", c.name, r, c.want)
				}
			}()
			Declare(c.s)
		}()
	}
	if Owner(widgetGrace) != "backend widget" || Owner(Zone) != "config" || Owner("nope") != "" {
		t.Errorf("Owner: %q %q %q", Owner(widgetGrace), Owner(Zone), Owner("nope"))
	}
}
