package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// got is the part of a Resolved a resolution test looks at.
type got struct{ Value, Source string }

func TestResolveOrder(t *testing.T) {
	file := writeFile(t, twoProfiles)
	home := t.TempDir()
	tests := []struct {
		name    string
		args    map[Key]string
		profile string
		env     env
		noFile  bool // no profiles file at all
		key     Key
		want    got
	}{
		{name: "default", key: Zone, noFile: true, want: got{"us-central1-a", "default"}},
		{name: "profile beats default", key: Zone, want: got{"europe-west4-a", "profile dev"}},
		{name: "env beats profile", key: Zone, env: env{"KINETIC_ZONE": "asia-east1-c"}, want: got{"asia-east1-c", "env KINETIC_ZONE"}},
		{name: "argument beats env", key: Zone, args: map[Key]string{Zone: "us-west1-b"},
			env: env{"KINETIC_ZONE": "asia-east1-c"}, want: got{"us-west1-b", "argument"}},
		{name: "empty argument is not given", key: Zone, args: map[Key]string{Zone: ""},
			env: env{"KINETIC_ZONE": "asia-east1-c"}, want: got{"asia-east1-c", "env KINETIC_ZONE"}},
		{name: "blank env is not set", key: Zone, env: env{"KINETIC_ZONE": "  "}, want: got{"europe-west4-a", "profile dev"}},
		{name: "explicit profile beats current", key: Zone, profile: "prod", want: got{"us-east5-b", "profile prod"}},
		{name: "KINETIC_PROFILE beats current", key: Cluster, env: env{"KINETIC_PROFILE": "prod"}, want: got{"c-prod", "profile prod"}},
		{name: "explicit profile beats KINETIC_PROFILE", key: Cluster, profile: "dev",
			env: env{"KINETIC_PROFILE": "prod"}, want: got{"c-dev", "profile dev"}},
		// attach(job_id, cluster=...): the cluster named chooses its profile (its store).
		{name: "cluster argument chooses its profile", key: Zone, args: map[Key]string{Cluster: "c-prod"},
			want: got{"us-east5-b", "profile prod"}},
		{name: "project and cluster choose their profile", key: Zone, args: map[Key]string{Project: "p-prod", Cluster: "c-prod"},
			want: got{"us-east5-b", "profile prod"}},
		{name: "cluster argument beats KINETIC_PROFILE", key: Zone, args: map[Key]string{Cluster: "c-prod"},
			env: env{"KINETIC_PROFILE": "dev"}, want: got{"us-east5-b", "profile prod"}},
		{name: "no profile matches both: the active one", key: Zone, args: map[Key]string{Project: "p-dev", Cluster: "c-prod"},
			want: got{"europe-west4-a", "profile dev"}},
		{name: "the active profile's own cluster keeps it", key: Zone, args: map[Key]string{Cluster: "c-dev"},
			want: got{"europe-west4-a", "profile dev"}},
		{name: "explicit profile beats the cluster argument", key: Zone, profile: "dev", args: map[Key]string{Cluster: "c-prod"},
			want: got{"europe-west4-a", "profile dev"}},
		{name: "a store argument keeps the active profile", key: Zone, args: map[Key]string{Cluster: "c-prod", Store: "/s"},
			want: got{"europe-west4-a", "profile dev"}},
		{name: "an unknown cluster is only an argument", key: Cluster, args: map[Key]string{Cluster: "c-new"},
			want: got{"c-new", "argument"}},
		{name: "null in profile falls to default", key: Namespace, profile: "prod", want: got{"default", "default"}},
		{name: "profile beats GOOGLE_CLOUD_PROJECT", key: Project, profile: "prod",
			env: env{"GOOGLE_CLOUD_PROJECT": "gp"}, want: got{"p-prod", "profile prod"}},
		{name: "GOOGLE_CLOUD_PROJECT is the last resort", key: Project, noFile: true,
			env: env{"GOOGLE_CLOUD_PROJECT": "gp"}, want: got{"gp", "env GOOGLE_CLOUD_PROJECT"}},
		{name: "KINETIC_PROJECT beats GOOGLE_CLOUD_PROJECT", key: Project, noFile: true,
			env: env{"GOOGLE_CLOUD_PROJECT": "gp", "KINETIC_PROJECT": "kp"}, want: got{"kp", "env KINETIC_PROJECT"}},
		{name: "project unset", key: Project, noFile: true, want: got{"", "unset"}},
		{name: "backend from profile", key: Backend, want: got{"gke", "profile dev"}},
		{name: "backend default", key: Backend, noFile: true, want: got{"local", "default"}},
		{name: "store default under KINETIC_HOME", key: Store, noFile: true, env: env{"KINETIC_HOME": "/srv/kn"},
			want: got{"file:///srv/kn/store", "default"}},
		// A project means GKE, GOOGLE_CLOUD_PROJECT's too (issue 44, as the reference).
		{name: "a profile's project means gke", key: Backend, profile: "prod", want: got{"gke", "default: project set (profile prod)"}},
		{name: "KINETIC_PROJECT means gke", key: Backend, noFile: true, env: env{"KINETIC_PROJECT": "kp"},
			want: got{"gke", "default: project set (env KINETIC_PROJECT)"}},
		{name: "a project argument means gke", key: Backend, noFile: true, args: map[Key]string{Project: "ap"},
			want: got{"gke", "default: project set (argument)"}},
		{name: "GOOGLE_CLOUD_PROJECT means gke", key: Backend, noFile: true, env: env{"GOOGLE_CLOUD_PROJECT": "gp"},
			want: got{"gke", "default: project set (env GOOGLE_CLOUD_PROJECT)"}},
		{name: "GOOGLE_CLOUD_PROJECT: up's bucket", key: Store, noFile: true, env: env{"GOOGLE_CLOUD_PROJECT": "gp", "KINETIC_HOME": "/srv/kn"},
			want: got{"gs://gp-kn-kinetic-cluster-jobs", "default: the bucket `kinetic up` makes for cluster kinetic-cluster of project gp"}},
		{name: "KINETIC_BACKEND=local beats GOOGLE_CLOUD_PROJECT", key: Backend, noFile: true, env: env{"GOOGLE_CLOUD_PROJECT": "gp", "KINETIC_BACKEND": "local"},
			want: got{"local", "env KINETIC_BACKEND"}},
		{name: "KINETIC_BACKEND beats the project's gke", key: Backend, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_BACKEND": "k8s"},
			want: got{"k8s", "env KINETIC_BACKEND"}},
		{name: "gke store: up's bucket", key: Store, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_CLUSTER": "kc"},
			want: got{"gs://kp-kn-kc-jobs", "default: the bucket `kinetic up` makes for cluster kc of project kp"}},
		{name: "gke registry: up's repository", key: ImageRegistry, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_ZONE": "europe-west4-b"},
			want: got{"europe-west4-docker.pkg.dev/kp/kn-kinetic-cluster", "default: the repository `kinetic up` makes for cluster kinetic-cluster of project kp in europe-west4"}},
		{name: "gke store from a profile", key: Store, profile: "prod", want: got{"gs://p-prod-kn-c-prod-jobs", "default: the bucket `kinetic up` makes for cluster c-prod of project p-prod"}},
		{name: "explicit gke with GOOGLE_CLOUD_PROJECT: up's bucket", key: Store, noFile: true, env: env{"GOOGLE_CLOUD_PROJECT": "gp", "KINETIC_BACKEND": "pathways"},
			want: got{"gs://gp-kn-kinetic-cluster-jobs", "default: the bucket `kinetic up` makes for cluster kinetic-cluster of project gp"}},
		{name: "k8s keeps the file store", key: Store, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_BACKEND": "k8s", "KINETIC_HOME": "/srv/kn"},
			want: got{"file:///srv/kn/store", "default"}},
		{name: "k8s has no registry default", key: ImageRegistry, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_BACKEND": "k8s"},
			want: got{"", "unset"}},
		{name: "a store set beats up's bucket", key: Store, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_STORE": "gs://mine"},
			want: got{"gs://mine", "env KINETIC_STORE"}},
		{name: "no registry default without a zone", key: ImageRegistry, noFile: true, env: env{"KINETIC_PROJECT": "kp", "KINETIC_ZONE": "global"},
			want: got{"", "unset"}},
		{name: "store path becomes URL", key: Store, env: env{"KINETIC_STORE": "/data/my store"},
			want: got{"file:///data/my%20store", "env KINETIC_STORE"}},
		{name: "output_dir unset", key: OutputDir, want: got{"", "unset"}},
		{name: "output_dir from env", key: OutputDir, env: env{"KINETIC_OUTPUT_DIR": "/out"}, want: got{"/out", "env KINETIC_OUTPUT_DIR"}},
		{name: "base_image_repo from env", key: BaseImageRepo, env: env{"KINETIC_BASE_IMAGE_REPO": "ghcr.io/k/base"},
			want: got{"ghcr.io/k/base", "env KINETIC_BASE_IMAGE_REPO"}},
		{name: "a declared key falls back to its variable", key: widgetConfig, env: env{"WIDGETCONFIG": "/k/config"},
			want: got{"/k/config", "env WIDGETCONFIG"}},
		{name: "KINETIC_<KEY> beats a declared key's variable", key: widgetConfig,
			env: env{"WIDGETCONFIG": "/k/config", "KINETIC_WIDGET_CONFIG": "/k/other"}, want: got{"/k/other", "env KINETIC_WIDGET_CONFIG"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := env{"HOME": home}
			for k, v := range tc.env {
				e[k] = v
			}
			o := Options{Args: tc.args, Profile: tc.profile, Getenv: e.get, ProfilesFile: file}
			if tc.noFile {
				o.ProfilesFile = filepath.Join(t.TempDir(), "none.json")
			}
			r, err := Resolve(o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got{r.Get(tc.key), r.Source(tc.key)}); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

// TestResolveEveryKeyEveryLayer checks, for every key, that each layer beats all below.
func TestResolveEveryKeyEveryLayer(t *testing.T) {
	sample := map[Key]string{Namespace: "ns-", Backend: "", Store: "mem://", GCSEndpoint: "http://h/"}
	valueFor := func(k Key, layer string) string {
		switch k {
		case Backend:
			return map[string]string{"arg": "k8s", "env": "pathways", "profile": "gke"}[layer]
		case widgetKind:
			return map[string]string{"arg": "round", "env": "square", "profile": "round"}[layer]
		case widgetGrace:
			return map[string]string{"arg": "1m0s", "env": "2m0s", "profile": "3m0s"}[layer]
		case ImageBuilder:
			return map[string]string{"arg": "podman", "env": "daemonless", "profile": "docker"}[layer]
		case Container:
			return map[string]string{"arg": "podman", "env": "auto", "profile": "docker"}[layer]
		case RuntimeLayer:
			return map[string]string{"arg": "none", "env": "jax", "profile": "none"}[layer]
		case NoDefaultExcludes, ForceDestroy:
			return map[string]string{"arg": "false", "env": "true", "profile": "false"}[layer]
		case widgetSlots:
			return map[string]string{"arg": "1", "env": "2", "profile": "3"}[layer]
		case ContextSizeWarnMB, UploadConfirmMB:
			return map[string]string{"arg": "0", "env": "1.5", "profile": "200"}[layer]
		case Python, BuildPython:
			return map[string]string{"arg": "sh", "env": "true", "profile": "false"}[layer]
		case PackageRoot:
			return map[string]string{"arg": "/a", "env": "/e", "profile": "/p"}[layer]
		}
		if p, ok := sample[k]; ok {
			return p + layer
		}
		return string(k) + "-" + layer
	}
	for _, k := range Keys() {
		prof := Profile{string(k): valueFor(k, "profile")}
		f := &File{Current: "p"}
		if err := f.Put("p", prof); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "profiles.json")
		if err := f.Save(path); err != nil {
			t.Fatal(err)
		}
		layers := []struct {
			name string
			o    Options
			want string
		}{
			{"argument", Options{Args: map[Key]string{k: valueFor(k, "arg")}, Getenv: env{k.EnvVar(): valueFor(k, "env")}.get}, "argument"},
			{"env", Options{Getenv: env{k.EnvVar(): valueFor(k, "env")}.get}, "env " + k.EnvVar()},
			{"profile", Options{Getenv: env{}.get}, "profile p"},
		}
		for _, l := range layers {
			l.o.ProfilesFile = path
			r, err := Resolve(l.o)
			if err != nil {
				t.Fatalf("%s/%s: %v", k, l.name, err)
			}
			if r.Source(k) != l.want {
				t.Errorf("%s: layer %s: source %q, want %q", k, l.name, r.Source(k), l.want)
			}
		}
	}
}

func TestResolveEntries(t *testing.T) {
	e := env{"HOME": "/home/u", "GOOGLE_CLOUD_PROJECT": "gp"}
	r, err := Resolve(Options{Getenv: e.get, Args: map[Key]string{Cluster: "mine"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Project, "gp", "env GOOGLE_CLOUD_PROJECT"},
		{Zone, "us-central1-a", "default"},
		{Cluster, "mine", "argument"},
		{Namespace, "default", "default"},
		{Backend, "gke", "default: project set (env GOOGLE_CLOUD_PROJECT)"},
		{Store, "gs://gp-kn-mine-jobs", "default: the bucket `kinetic up` makes for cluster mine of project gp"},
		{OutputDir, "", "unset"},
		{BaseImageRepo, "", "unset"},
		{ImageRegistry, "us-central1-docker.pkg.dev/gp/kn-mine", "default: the repository `kinetic up` makes for cluster mine of project gp in us-central1"},
		{BaseImageCPU, "", "unset"},
		{BaseImageGPU, "", "unset"},
		{BaseImageTPU, "", "unset"},
		{ImageBuilder, "", "unset"},
		{RuntimeLayer, "jax", "default"},
		{Container, "", "unset"},
		{KubeContext, "", "unset"},
		{GCSEndpoint, "", "unset"},
		{LWSImage, "", "unset"},
		{Reservation, "", "unset"},
		{ForceDestroy, "false", "default"},
		{Python, "", "unset"},
		{BuildPython, "", "unset"},
		{PackageRoot, "", "unset"},
		{NoDefaultExcludes, "false", "default"},
		{ContextSizeWarnMB, "100", "default"},
		{UploadConfirmMB, "1024", "default"},
		// The declared keys, after config's own, in the order they were declared.
		{widgetConfig, "", "unset"},
		{widgetKind, "", "unset"},
		{widgetGrace, "10m0s", "default"},
		{widgetSlots, "4", "default (CPUs)"},
	}
	if diff := cmp.Diff(want, r.Entries()); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}
	if r.ProfileName() != "" || r.ProfilesFile() != "/home/u/.kinetic/profiles.json" {
		t.Errorf("profile %q from %q", r.ProfileName(), r.ProfilesFile())
	}
}

func TestResolveErrors(t *testing.T) {
	file := writeFile(t, twoProfiles)
	tests := []struct {
		name string
		o    Options
		is   error
		want []string // substrings of the message
	}{
		{"bad backend", Options{Args: map[Key]string{Backend: "slurm"}}, ErrInvalid,
			[]string{`invalid backend "slurm" (from argument)`, "gke, k8s, local, pathways"}},
		{"bad namespace from env", Options{Getenv: env{"KINETIC_NAMESPACE": "My_NS"}.get}, ErrInvalid,
			[]string{`invalid namespace "My_NS" (from env KINETIC_NAMESPACE)`}},
		{"relative store", Options{Args: map[Key]string{Store: "data/store"}}, ErrInvalid, []string{"absolute path"}},
		{"unknown scheme", Options{Args: map[Key]string{Store: "ftp://h/x"}}, ErrInvalid, []string{`"ftp"`, "gs://"}},
		{"bad declared value", Options{Args: map[Key]string{widgetKind: "oval"}}, ErrInvalid, []string{`invalid widget_kind "oval" (from argument)`, "round, square"}},
		{"bad declared value from env", Options{Getenv: env{"KINETIC_WIDGET_GRACE": "soon"}.get}, ErrInvalid, []string{"KINETIC_WIDGET_GRACE", "positive duration"}},
		{"unknown key", Options{Args: map[Key]string{"zoen": "x"}}, nil, []string{`unknown configuration key "zoen"`, "zone"}},
		{"missing explicit profile", Options{Profile: "staging"}, ErrProfileNotFound,
			[]string{`profile "staging" does not exist (named by --profile)`, "existing profiles: dev, prod"}},
		{"missing env profile", Options{Getenv: env{"KINETIC_PROFILE": "qa"}.get}, ErrProfileNotFound,
			[]string{`"qa"`, "KINETIC_PROFILE", "dev, prod"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Getenv == nil {
				tc.o.Getenv = env{}.get
			}
			tc.o.ProfilesFile = file
			_, err := Resolve(tc.o)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestResolveDanglingCurrent(t *testing.T) {
	file := writeFile(t, `{"current": "gone", "profiles": {}}`)
	_, err := Resolve(Options{Getenv: env{}.get, ProfilesFile: file})
	var nf *ProfileNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want ProfileNotFoundError", err)
	}
	if !strings.Contains(err.Error(), "current in "+file) || !strings.Contains(err.Error(), "kinetic profile create gone") {
		t.Errorf("message %q", err)
	}
}

func TestResolveCorruptFile(t *testing.T) {
	file := writeFile(t, `{"current": "dev", "profiles": {`)
	_, err := Resolve(Options{Getenv: env{}.get, ProfilesFile: file})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	for _, w := range []string{file, "fix it by hand", "KINETIC_PROFILES_FILE"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestDataDir(t *testing.T) {
	tests := []struct {
		name string
		env  env
		want string
	}{
		{"KINETIC_HOME", env{"KINETIC_HOME": "/kh", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/kh"},
		{"XDG_DATA_HOME", env{"XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/xdg/kinetic"},
		{"relative XDG ignored", env{"XDG_DATA_HOME": "xdg", "HOME": "/h"}, "/h/.local/share/kinetic"},
		{"home", env{"HOME": "/h"}, "/h/.local/share/kinetic"},
	}
	for _, tc := range tests {
		if got := dataDir(tc.env.get); got != tc.want {
			t.Errorf("%s: dataDir = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestProfilesPath(t *testing.T) {
	if got := ProfilesPath(env{"HOME": "/h"}.get); got != "/h/.kinetic/profiles.json" {
		t.Errorf("default: %q", got)
	}
	if got := ProfilesPath(env{"HOME": "/h", "KINETIC_PROFILES_FILE": "/x.json"}.get); got != "/x.json" {
		t.Errorf("override: %q", got)
	}
}

// TestMachineSettings: the settings that used to be read deep inside packages
// (KINETIC_WARM, KINETIC_LOCAL_SLOTS, KINETIC_PYTHON, STORAGE_EMULATOR_HOST …) resolve
// here, with their forms of old, and bad values name the variable.
func TestMachineSettings(t *testing.T) {
	for _, tc := range []struct {
		env       env
		key       Key
		want, src string
		bad       string // a part of the error, when the value is refused
	}{
		{env: env{"KINETIC_NO_DEFAULT_EXCLUDES": "yes"}, key: NoDefaultExcludes, want: "true", src: "env KINETIC_NO_DEFAULT_EXCLUDES"},
		{env: env{"KINETIC_NO_DEFAULT_EXCLUDES": "off"}, key: NoDefaultExcludes, want: "false", src: "env KINETIC_NO_DEFAULT_EXCLUDES"},
		{env: env{"STORAGE_EMULATOR_HOST": "127.0.0.1:4443"}, key: GCSEndpoint, want: "http://127.0.0.1:4443", src: "env STORAGE_EMULATOR_HOST"},
		{env: env{"STORAGE_EMULATOR_HOST": "127.0.0.1:1", "KINETIC_GCS_ENDPOINT": "https://g.example"}, key: GCSEndpoint, want: "https://g.example", src: "env KINETIC_GCS_ENDPOINT"},
		{env: env{"KINETIC_PYTHON": "/no/such/python3"}, key: Python, bad: "not an executable file"},
		{env: env{"KINETIC_PACKAGE_ROOT": "relative/./dir/"}, key: PackageRoot, want: "relative/dir", src: "env KINETIC_PACKAGE_ROOT"},
		{env: env{"KINETIC_PACKAGE_ROOT": "~/proj/../work"}, key: PackageRoot, want: "~/work", src: "env KINETIC_PACKAGE_ROOT"},
		{env: env{"KINETIC_CONTEXT_SIZE_WARN_MB": "lots"}, key: ContextSizeWarnMB, bad: "size in MiB"},
		{env: env{"KINETIC_CONTEXT_SIZE_WARN_MB": "0"}, key: ContextSizeWarnMB, want: "0", src: "env KINETIC_CONTEXT_SIZE_WARN_MB"},
	} {
		t.Run(string(tc.key)+"="+tc.want+tc.bad, func(t *testing.T) {
			tc.env["HOME"] = t.TempDir()
			r, err := Resolve(Options{Getenv: tc.env.get})
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("Resolve = %v, want an error with %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(got{tc.want, tc.src}, got{r.Get(tc.key), r.Source(tc.key)}); d != "" {
				t.Error(d)
			}
		})
	}
}
