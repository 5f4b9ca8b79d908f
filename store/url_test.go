package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormaliseObjectURLs(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	for name, tc := range map[string]struct {
		env, raw string
		want     target
	}{
		"gs plain":          {raw: "gs://b", want: target{scheme: "gs", open: "gs://b", record: "gs://b"}},
		"gs path is prefix": {raw: "gs://b/team-a/x/", want: target{scheme: "gs", open: "gs://b?prefix=team-a%2Fx%2F", record: "gs://b/team-a/x/"}},
		"s3 path is prefix": {raw: "s3://b/team-a?region=eu-west-1", want: target{scheme: "s3", open: "s3://b?prefix=team-a%2F&region=eu-west-1", record: "s3://b/team-a?region=eu-west-1"}},
		"gs endpoint param": {raw: "gs://b/p?endpoint=127.0.0.1:4443", want: target{
			scheme: "gs", open: "gs://b?prefix=p%2F", record: "gs://b/p?endpoint=127.0.0.1:4443",
			bucket: "b", endpoint: "http://127.0.0.1:4443", prefix: "p/"}},
		"gs endpoint from env": {env: "127.0.0.1:9", raw: "gs://b?prefix=q/", want: target{
			scheme: "gs", open: "gs://b?prefix=q%2F", record: "gs://b?prefix=q/&endpoint=http://127.0.0.1:9",
			bucket: "b", endpoint: "http://127.0.0.1:9", prefix: "q/"}},
		"param wins over env": {env: "127.0.0.1:9", raw: "gs://b?endpoint=https://emu.example:8443/", want: target{
			scheme: "gs", open: "gs://b", record: "gs://b?endpoint=https://emu.example:8443/",
			bucket: "b", endpoint: "https://emu.example:8443"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("STORAGE_EMULATOR_HOST", tc.env)
			got, err := normalise(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(target{})); d != "" {
				t.Errorf("normalise(%q) (-want +got):\n%s", tc.raw, d)
			}
		})
	}
}
