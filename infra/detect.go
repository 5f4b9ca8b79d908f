package infra

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// KubeContext is one context of the kubeconfig.
type KubeContext struct {
	Name      string `json:"name"`
	Server    string `json:"server"`
	Namespace string `json:"namespace,omitempty"`
	Current   bool   `json:"current"`
}

// Found is what kinetic init finds already set up on this machine.
type Found struct {
	// Kubeconfig is where the contexts came from ($KUBECONFIG or ~/.kube/config).
	Kubeconfig string        `json:"kubeconfig"`
	Contexts   []KubeContext `json:"contexts"`
	// Project is the Google Cloud project and ProjectFrom where it was read.
	Project     string `json:"project,omitempty"`
	ProjectFrom string `json:"project_from,omitempty"`
	// Zone is gcloud's compute/zone, if set.
	Zone string `json:"zone,omitempty"`
	// Credentials names the Google credentials found ("" if none).
	Credentials string `json:"credentials,omitempty"`
}

// Detect reads what is present: kubeconfig contexts, the gcloud project (from
// CLOUDSDK_CORE_PROJECT, GOOGLE_CLOUD_PROJECT, then gcloud's active configuration),
// and Google credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default
// credentials). getenv reads the environment; home is the user's home directory.
// It only reads files; nothing is contacted.
func Detect(getenv func(string) string, home string) Found {
	var f Found
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := getenv("KUBECONFIG"); kc != "" {
		rules.Precedence = filepath.SplitList(kc)
		f.Kubeconfig = kc
	} else {
		f.Kubeconfig = filepath.Join(home, ".kube", "config")
		rules.Precedence = []string{f.Kubeconfig}
	}
	if raw, err := rules.Load(); err == nil {
		for name, c := range raw.Contexts {
			kc := KubeContext{Name: name, Namespace: c.Namespace, Current: name == raw.CurrentContext}
			if cl := raw.Clusters[c.Cluster]; cl != nil {
				kc.Server = cl.Server
			}
			f.Contexts = append(f.Contexts, kc)
		}
		sort.Slice(f.Contexts, func(i, j int) bool {
			if f.Contexts[i].Current != f.Contexts[j].Current {
				return f.Contexts[i].Current
			}
			return f.Contexts[i].Name < f.Contexts[j].Name
		})
	}

	gdir := getenv("CLOUDSDK_CONFIG")
	if gdir == "" {
		gdir = filepath.Join(home, ".config", "gcloud")
	}
	props := gcloudProperties(gdir)
	switch {
	case getenv("CLOUDSDK_CORE_PROJECT") != "":
		f.Project, f.ProjectFrom = getenv("CLOUDSDK_CORE_PROJECT"), "CLOUDSDK_CORE_PROJECT"
	case getenv("GOOGLE_CLOUD_PROJECT") != "":
		f.Project, f.ProjectFrom = getenv("GOOGLE_CLOUD_PROJECT"), "GOOGLE_CLOUD_PROJECT"
	case props["core/project"] != "":
		f.Project, f.ProjectFrom = props["core/project"], "gcloud configuration "+props[""]
	}
	f.Zone = getenv("CLOUDSDK_COMPUTE_ZONE")
	if f.Zone == "" {
		f.Zone = props["compute/zone"]
	}
	if p := getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" && fileExists(p) {
		f.Credentials = "GOOGLE_APPLICATION_CREDENTIALS (" + p + ")"
	} else if p := filepath.Join(gdir, "application_default_credentials.json"); fileExists(p) {
		f.Credentials = "gcloud application default credentials (" + p + ")"
	}
	return f
}

// gcloudProperties reads the active gcloud configuration's properties as
// "section/key" → value; "" holds the configuration's name.
func gcloudProperties(dir string) map[string]string {
	out := map[string]string{}
	active := "default"
	if b, err := os.ReadFile(filepath.Join(dir, "active_config")); err == nil && strings.TrimSpace(string(b)) != "" {
		active = strings.TrimSpace(string(b))
	}
	out[""] = active
	fh, err := os.Open(filepath.Join(dir, "configurations", "config_"+active))
	if err != nil {
		return out
	}
	defer fh.Close()
	section := ""
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(line[1 : len(line)-1])
		default:
			if k, v, ok := strings.Cut(line, "="); ok {
				out[section+"/"+strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
