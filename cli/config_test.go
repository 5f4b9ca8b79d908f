package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kinetic-run/kinetic/config"
)

func TestConfigShow(t *testing.T) {
	cfgEnv(t)
	must(t, "profile", "create", "dev", "--project", "p-dev", "--zone", "europe-west4-a")
	t.Setenv("KINETIC_CLUSTER", "env-cluster")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "ignored")

	out := must(t, "config", "show", "--namespace", "team-a", "--json")
	var got struct {
		Profile       string `json:"profile"`
		ProfileSource string `json:"profile_source"`
		Values        []struct {
			Key, Value, Source string
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	type kv struct{ Value, Source string }
	m := map[string]kv{}
	for _, v := range got.Values {
		m[v.Key] = kv{v.Value, v.Source}
	}
	want := map[string]kv{
		"project":   {"p-dev", "profile dev"},
		"zone":      {"europe-west4-a", "profile dev"},
		"cluster":   {"env-cluster", "env KINETIC_CLUSTER"},
		"namespace": {"team-a", "argument"},
		// The profile's project means GKE (and wins over GOOGLE_CLOUD_PROJECT's).
		"backend":        {"gke", "default: project set (profile dev)"},
		"store":          {"gs://p-dev-kn-env-cluster-jobs", "default: the bucket `kinetic up` makes for cluster env-cluster of project p-dev"},
		"image_registry": {"europe-west4-docker.pkg.dev/p-dev/kn-env-cluster", "default: the repository `kinetic up` makes for cluster env-cluster of project p-dev in europe-west4"},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, m[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	if got.Profile != "dev" || len(got.Values) != len(config.Keys()) {
		t.Errorf("profile %q, %d values", got.Profile, len(got.Values))
	}
}

// TestConfigShowGKEDefaults: KINETIC_PROJECT and KINETIC_CLUSTER alone mean GKE, with
// the bucket and repository `kinetic up` makes; so does GOOGLE_CLOUD_PROJECT alone, as in
// the reference (issue 44).
func TestConfigShowGKEDefaults(t *testing.T) {
	show := func() map[string][2]string {
		t.Helper()
		var got struct {
			Values []struct{ Key, Value, Source string } `json:"values"`
		}
		if err := json.Unmarshal([]byte(must(t, "config", "show", "--json")), &got); err != nil {
			t.Fatal(err)
		}
		m := map[string][2]string{}
		for _, v := range got.Values {
			m[v.Key] = [2]string{v.Value, v.Source}
		}
		return m
	}
	cfgEnv(t)
	t.Setenv("KINETIC_HOME", "/kh")
	t.Setenv("KINETIC_PROJECT", "kp")
	t.Setenv("KINETIC_CLUSTER", "kc")
	m := show()
	for k, w := range map[string][2]string{
		"backend":        {"gke", "default: project set (env KINETIC_PROJECT)"},
		"store":          {"gs://kp-kn-kc-jobs", "default: the bucket `kinetic up` makes for cluster kc of project kp"},
		"image_registry": {"us-central1-docker.pkg.dev/kp/kn-kc", "default: the repository `kinetic up` makes for cluster kc of project kp in us-central1"},
		"cluster":        {"kc", "env KINETIC_CLUSTER"},
	} {
		if m[k] != w {
			t.Errorf("%s = %q, want %q", k, m[k], w)
		}
	}

	t.Setenv("KINETIC_PROJECT", "")
	t.Setenv("KINETIC_CLUSTER", "")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "gp")
	m = show()
	for k, w := range map[string][2]string{
		"project":        {"gp", "env GOOGLE_CLOUD_PROJECT"},
		"backend":        {"gke", "default: project set (env GOOGLE_CLOUD_PROJECT)"},
		"store":          {"gs://gp-kn-kinetic-cluster-jobs", "default: the bucket `kinetic up` makes for cluster kinetic-cluster of project gp"},
		"image_registry": {"us-central1-docker.pkg.dev/gp/kn-kinetic-cluster", "default: the repository `kinetic up` makes for cluster kinetic-cluster of project gp in us-central1"},
	} {
		if m[k] != w {
			t.Errorf("GOOGLE_CLOUD_PROJECT only: %s = %q, want %q", k, m[k], w)
		}
	}
}

func TestConfigShowTable(t *testing.T) {
	cfgEnv(t)
	t.Setenv("KINETIC_HOME", "/kh")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "gp")
	t.Setenv("KINETIC_LOCAL_SLOTS", "3") // the default is this machine's CPU count
	// config's own keys, then the ones the linked backends declare (kubernetes, local),
	// each with where its value came from.
	want := "" +
		"KEY                    VALUE             SOURCE\n" +
		"project                gp                env GOOGLE_CLOUD_PROJECT\n" +
		"zone                   us-central1-a     default\n" +
		"cluster                kinetic-cluster   default\n" +
		"namespace              default           default\n" +
		"backend                k8s               argument\n" +
		"store                  file:///kh/store  default\n" +
		"output_dir             -                 unset\n" +
		"base_image_repo        -                 unset\n" +
		"image_registry         -                 unset\n" +
		"base_image_cpu         -                 unset\n" +
		"base_image_gpu         -                 unset\n" +
		"base_image_tpu         -                 unset\n" +
		"image_builder          -                 unset\n" +
		"runtime_layer          jax               default\n" +
		"container              -                 unset\n" +
		"kube_context           -                 unset\n" +
		"gcs_endpoint           -                 unset\n" +
		"lws_image              -                 unset\n" +
		"reservation            -                 unset\n" +
		"force_destroy          false             default\n" +
		"python                 -                 unset\n" +
		"build_python           -                 unset\n" +
		"package_root           -                 unset\n" +
		"no_default_excludes    false             default\n" +
		"context_size_warn_mb   100               default\n" +
		"upload_confirm_mb      1024              default\n" +
		"service_account        -                 unset\n" +
		"kubeconfig             -                 unset\n" +
		"cluster_type           -                 unset\n" +
		"runner_image           -                 unset\n" +
		"store_secret           -                 unset\n" +
		"pod_cpu                250m              default\n" +
		"pod_memory             -                 unset\n" +
		"unschedulable_grace    10m0s             default\n" +
		"image_pull_grace       2m0s              default\n" +
		"node_lost_grace        5m0s              default\n" +
		"accelerator_resources  true              default\n" +
		"warm_pods              2                 default\n" +
		"warm_pod_idle          1m0s              default\n" +
		"gcp_endpoints          -                 unset\n" +
		"local_slots            3                 env KINETIC_LOCAL_SLOTS\n" +
		"warm                   true              default\n" +
		"batch_isolation        worker            default\n" +
		"warm_idle              10m0s             default\n"
	if diff := cmp.Diff(want, must(t, "config", "show", "--backend", "k8s")); diff != "" {
		t.Errorf("config show (-want +got):\n%s", diff)
	}
}

// TestSettingFlagErrors: a bad value of a setting's flag is an error that names the
// flag (not the key, nor "from argument"), on every command with the flags, before
// anything runs; the help of the warm pod settings says whose they are and the default.
func TestSettingFlagErrors(t *testing.T) {
	cfgEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--warm-pods", "-1", "m.py::f"}, `--warm-pods "-1": "-1" is not a whole number of 0 or more`},
		{[]string{"run", "--warm-pod-idle", "banana", "m.py::f"}, `--warm-pod-idle "banana": "banana" is not a positive duration`},
		{[]string{"config", "show", "--warm-pods=two"}, `--warm-pods "two": "two" is not a whole number`},
	} {
		_, _, err := kinetic(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "from argument") {
			t.Errorf("kinetic %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	out, _, err := kinetic(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--warm-pods string", "Kubernetes backend: how many idle pods", "default 2", "--warm-pod-idle string", "Kubernetes backend: how long a warm pod waits", "default 60s", "(env KINETIC_WARM_POD_IDLE)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	// Good values still reach the configuration, from the flag.
	out, _, err = kinetic(t, "config", "show", "--json", "--warm-pods", "0", "--warm-pod-idle", "90s")
	if err != nil || !strings.Contains(out, `"key": "warm_pods",
      "value": "0",
      "source": "argument"`) || !strings.Contains(out, `"value": "1m30s"`) {
		t.Errorf("config show --json with the flags: %v\n%s", err, out)
	}
}
