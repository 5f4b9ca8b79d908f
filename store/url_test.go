package store

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/store/driver"
)

func TestLocateObjectURLs(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	for name, tc := range map[string]struct {
		env, raw string
		want     driver.Location
	}{
		"gs plain":          {raw: "gs://b", want: driver.Location{Scheme: "gs", Open: "gs://b", Record: "gs://b", Bucket: "b"}},
		"gs path is prefix": {raw: "gs://b/team-a/x/", want: driver.Location{Scheme: "gs", Open: "gs://b?prefix=team-a%2Fx%2F", Record: "gs://b/team-a/x/", Bucket: "b", Prefix: "team-a/x/"}},
		"gs endpoint param": {raw: "gs://b/p?endpoint=127.0.0.1:4443", want: driver.Location{
			Scheme: "gs", Open: "gs://b?prefix=p%2F", Record: "gs://b/p?endpoint=127.0.0.1:4443",
			Bucket: "b", Endpoint: "http://127.0.0.1:4443", Prefix: "p/"}},
		"gs endpoint from env": {env: "127.0.0.1:9", raw: "gs://b?prefix=q/", want: driver.Location{
			Scheme: "gs", Open: "gs://b?prefix=q%2F", Record: "gs://b?prefix=q/&endpoint=http://127.0.0.1:9",
			Bucket: "b", Endpoint: "http://127.0.0.1:9", Prefix: "q/"}},
		"param wins over env": {env: "127.0.0.1:9", raw: "gs://b?endpoint=https://emu.example:8443/", want: driver.Location{
			Scheme: "gs", Open: "gs://b", Record: "gs://b?endpoint=https://emu.example:8443/",
			Bucket: "b", Endpoint: "https://emu.example:8443"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("STORAGE_EMULATOR_HOST", tc.env)
			got, err := locate(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got.Location); d != "" {
				t.Errorf("locate(%q) (-want +got):\n%s", tc.raw, d)
			}
		})
	}
}

func TestWithEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"gs://b/p":                       "gs://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A4443",
		"gs://b?endpoint=http://other:1": "gs://b?endpoint=http://other:1",
		"file:///var/kinetic":            "file:///var/kinetic",
		"s3://b":                         "s3://b",
	} {
		if got := WithEndpoint(in, "http://127.0.0.1:4443"); got != want {
			t.Errorf("WithEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
	if got := WithEndpoint("gs://b", ""); got != "gs://b" {
		t.Errorf("no endpoint: %q", got)
	}
}

// TestOpenWithoutDriver: a scheme whose driver the program did not link (store links no
// cloud SDK; this test binary does not link store/s3) fails naming the package to link.
func TestOpenWithoutDriver(t *testing.T) {
	_, err := Open(context.Background(), "s3://bucket/team")
	if err == nil || !strings.Contains(err.Error(), "store/s3") {
		t.Fatalf("Open(s3://) without the s3 driver = %v, want an error naming store/s3", err)
	}
}

// TestGSParametersRefused: gocloud's gs:// URL parameters (a key file, anonymous access)
// are not how kinetic reaches Cloud Storage; they are refused by name, not ignored.
func TestGSParametersRefused(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	_, err := locate("gs://b/p?private_key_path=/k.pem")
	if err == nil || !strings.Contains(err.Error(), `parameter "private_key_path" is not supported`) || !strings.Contains(err.Error(), "Application Default Credentials") {
		t.Fatalf("locate with private_key_path = %v", err)
	}
}
