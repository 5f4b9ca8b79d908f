package images

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/testkit/imagetest"
)

// TestAddRunnerToAUsersImage: a user's image given by tag is looked up (one HEAD) and
// gets the runner in Kinetic's repository; a second job of it costs that HEAD only; an
// image that cannot be looked up keeps the runner out and says why once, in a person's
// words, with no error text of the transport.
func TestAddRunnerToAUsersImage(t *testing.T) {
	ctx := context.Background()
	reg := imagetest.StartProxy(t, imagetest.StartDockerRegistry(t).Host)
	bin := filepath.Join(t.TempDir(), "kinetic-runner")
	if err := os.WriteFile(bin, []byte("runner"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo, _ := image.ParseRepository(reg.Host + "/team/kinetic-runner")
	runner, err := (&image.Client{}).PublishRunner(ctx, repo, map[string]string{"linux/amd64": bin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runnerImage := func(context.Context) (string, error) { return runner.String(), nil }
	imagetest.Push(t, imagetest.TinyBase(t), reg.Host+"/alice/model:1")
	into, _ := image.ParseRepository(reg.Host + "/team/kinetic-env")
	parse := func(s string) name.Reference {
		r, err := image.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var warned []string
	warn := func(s string) { warned = append(warned, s) }

	mine := parse(reg.Host + "/alice/model:1")
	w, ok := AddRunner(ctx, mine, into, runnerImage, nil, warn)
	if !ok || w.Image.Context() != into || w.Runner != runner || len(warned) != 0 {
		t.Fatalf("AddRunner(%s) = %+v %v, warned %q: want it in %s", mine, w, ok, warned, into)
	}
	reg.Take()
	again, ok := AddRunner(ctx, mine, into, runnerImage, nil, warn)
	if reqs := reg.Take(); !ok || again != w || len(reqs) != 1 || imagetest.Count(reqs, "HEAD", "/alice/model/manifests/1") != 1 {
		t.Errorf("a second job: %+v %v, requests %q: want the same image and one HEAD of the user's tag", again, ok, reqs)
	}

	// Fault injection: a registry that wants credentials this machine does not have.
	denied := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		rw.WriteHeader(http.StatusUnauthorized)
	}))
	defer denied.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct{ name, img, want string }{
		{"not found", reg.Host + "/alice/model:nope", "it is not in " + reg.Host + ": check container_image"},
		{"no credentials", denied.Listener.Addr().String() + "/alice/model:1", denied.Listener.Addr().String() + " did not let this machine read it: log in to"},
		{"unreachable", closed.Listener.Addr().String() + "/alice/model:1", closed.Listener.Addr().String() + " could not be reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warned = nil
			img := parse(tc.img)
			w, ok := AddRunner(ctx, img, into, runnerImage, nil, warn)
			if ok || w != (image.WithRunner{}) || len(warned) != 1 {
				t.Fatalf("AddRunner(%s) = %+v %v, warned %q: want not added, said once", img, w, ok, warned)
			}
			want := "kinetic: the runner stays out of the image " + img.String() + " (" + tc.want
			if !strings.HasPrefix(warned[0], want) || !strings.HasSuffix(warned[0], "its pods copy it in first, a few seconds more per pod\n") {
				t.Errorf("said %q, want it to start %q", warned[0], want)
			}
			// The registry's address (a random port: 127.0.0.1:40167) is not jargon.
			said := strings.ReplaceAll(warned[0], img.Context().RegistryStr(), "REGISTRY")
			for _, jargon := range []string{"dial", "refused", "401", "404", "UNAUTHORIZED", "context", "look up"} {
				if strings.Contains(said, jargon) {
					t.Errorf("said %q: %q is not for a person", warned[0], jargon)
				}
			}
		})
	}
}
