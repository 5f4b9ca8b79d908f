package gcs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/store"
	"github.com/kinetic-run/kinetic/store/gcs"
	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

// recorder is a reverse proxy in front of fake-gcs-server that keeps the bodies of
// bucket inserts: the emulator creates buckets but drops lifecycle rules, so the rule is
// checked as sent.
type recorder struct {
	mu      sync.Mutex
	inserts [][]byte
}

func (r *recorder) start(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/storage/v1/b") {
			b, _ := io.ReadAll(req.Body)
			r.mu.Lock()
			r.inserts = append(r.inserts, b)
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type sentBucket struct {
	Name      string `json:"name"`
	Location  string `json:"location"`
	Lifecycle struct {
		Rule []struct {
			Action    struct{ Type string } `json:"action"`
			Condition struct {
				Age           int      `json:"age"`
				MatchesPrefix []string `json:"matchesPrefix"`
			} `json:"condition"`
		} `json:"rule"`
	} `json:"lifecycle"`
	IAMConfiguration struct {
		UniformBucketLevelAccess struct {
			Enabled bool `json:"enabled"`
		} `json:"uniformBucketLevelAccess"`
	} `json:"iamConfiguration"`
}

func TestCreateBucketWithRetention(t *testing.T) {
	ctx := context.Background()
	srv := gcstest.Start(t)
	var rec recorder
	ep := rec.start(t, srv.URL())
	for name, tc := range map[string]struct {
		path       string
		wantPrefix []string
	}{
		"whole bucket": {"", []string{"jobs/", "groups/", "blobs/", "tombstones/"}},
		"prefix":       {"/team-a", []string{"team-a/jobs/", "team-a/groups/", "team-a/blobs/", "team-a/tombstones/"}},
	} {
		t.Run(name, func(t *testing.T) {
			bucket := "kinetic-create-" + strings.ReplaceAll(name, " ", "-")
			u := "gs://" + bucket + tc.path + "?endpoint=" + ep
			if err := gcs.CreateBucket(ctx, u, gcs.BucketOptions{Project: "p", Location: "us-central1"}); err != nil {
				t.Fatal(err)
			}
			// The bucket is real: a store opens on it (through the emulator directly).
			s, err := store.Open(ctx, "gs://"+bucket+tc.path+"?endpoint="+srv.URL())
			if err != nil {
				t.Fatalf("open the new bucket: %v", err)
			}
			s.Close()
			rec.mu.Lock()
			raw := rec.inserts[len(rec.inserts)-1]
			rec.mu.Unlock()
			var got sentBucket
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("insert body %s: %v", raw, err)
			}
			if got.Name != bucket || got.Location != "us-central1" || len(got.Lifecycle.Rule) != 1 {
				t.Fatalf("insert body = %s", raw)
			}
			if !got.IAMConfiguration.UniformBucketLevelAccess.Enabled {
				t.Errorf("insert body %s: uniform bucket-level access not set (organisations that enforce it refuse the bucket with 412)", raw)
			}
			r := got.Lifecycle.Rule[0]
			if r.Action.Type != "Delete" || r.Condition.Age != store.RetentionDays {
				t.Errorf("rule = %+v, want Delete at age %d", r, store.RetentionDays)
			}
			if d := cmp.Diff(tc.wantPrefix, r.Condition.MatchesPrefix); d != "" {
				t.Errorf("matchesPrefix (-want +got):\n%s", d)
			}
			for _, p := range r.Condition.MatchesPrefix {
				if strings.Contains(p, "outputs") {
					t.Errorf("the rule reaches outputs: %q", p)
				}
			}

			// A second create leaves the bucket alone and says so.
			err = gcs.CreateBucket(ctx, u, gcs.BucketOptions{Project: "p"})
			if !errors.Is(err, gcs.ErrBucketExists) {
				t.Errorf("second create: %v, want ErrBucketExists", err)
			}
		})
	}
}

func TestCreateBucketRefusals(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		url, project, want string
	}{
		"file store": {"file:///tmp/x", "p", "only gs:// stores"},
		"no project": {"gs://b?endpoint=http://127.0.0.1:1", "", "needs the project"},
		"bad url":    {"gs://", "p", "needs a bucket"},
	} {
		t.Run(name, func(t *testing.T) {
			err := gcs.CreateBucket(ctx, tc.url, gcs.BucketOptions{Project: tc.project})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateBucket = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUnusableKeyFile: a GOOGLE_APPLICATION_CREDENTIALS file that is not a key is
// ErrNoCredentials (FailedPrecondition), saying what is wrong with the file, not telling
// the user to set the variable they set, nor quoting the JSON decoder.
func TestUnusableKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key.json")
	os.WriteFile(p, []byte("{not json"), 0o600)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", p)
	t.Setenv("HOME", dir)
	_, err := store.Open(context.Background(), "gs://a-bucket")
	if !errors.Is(err, gcs.ErrNoCredentials) || errs.CodeOf(err) != errs.FailedPrecondition {
		t.Fatalf("open: %v (code %s), want ErrNoCredentials, FailedPrecondition", err, errs.CodeOf(err))
	}
	msg := err.Error()
	if !strings.Contains(msg, "GOOGLE_APPLICATION_CREDENTIALS="+p+" is not a JSON object") || strings.Contains(msg, "invalid character") || strings.Contains(msg, "or set GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("open: %q", msg)
	}
}
