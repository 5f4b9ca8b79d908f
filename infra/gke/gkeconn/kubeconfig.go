package gkeconn

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// AuthPlugin is the credential plugin kubectl runs for a GKE context: it prints an
// access token from the gcloud or Application Default Credentials.
const AuthPlugin = "gke-gcloud-auth-plugin"

// authPluginHint is what kubectl prints when the plugin is missing (gcloud writes the same).
const authPluginHint = "Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"

// Extension names the kubeconfig context extension that marks a context kinetic wrote.
// Kinetic connects to such a cluster directly (endpoint and CA from the GKE API and the
// cache, ADC tokens) rather than through the context: the same cluster, but a
// re-created cluster's new CA is read again, and the plugin need not be installed.
// `gcloud container clusters get-credentials` rewrites the context without it, and
// from then on kinetic uses gcloud's context as it would any other.
const Extension = "kinetic.dev/written-by"

// Context is the kubeconfig context, cluster and user name `gcloud container clusters
// get-credentials` gives cl, gke_PROJECT_ZONE_CLUSTER; kinetic writes the same names.
func (c Cluster) Context() string { return "gke_" + c.key() }

// KubeconfigResult says what WriteKubeconfig did.
type KubeconfigResult struct {
	// Path is the file written (the first of KUBECONFIG's files that exists, else
	// ~/.kube/config, as kubectl chooses).
	Path string
	// Context is the context's name, now the current one.
	Context string
	// Changed is false when the file already said all of it.
	Changed bool
	// Plugin is where AuthPlugin was found on PATH, "" when it was not: kubectl needs it
	// before the context works (kinetic does not).
	Plugin string
}

// KubeconfigAccess is the kubeconfig kubectl reads: path when set (the kubeconfig
// setting), else KUBECONFIG's files, else ~/.kube/config.
func KubeconfigAccess(path string) *clientcmd.PathOptions {
	po := clientcmd.NewDefaultPathOptions()
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	if path == "" && env == "" {
		// ~/.kube/config of HOME now (clientcmd's was fixed when the program started).
		path = filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	}
	if path != "" && path != env {
		po.EnvVar = ""
		po.GlobalFile = path
		po.LoadingRules.Precedence = []string{path}
	}
	return po
}

// WriteKubeconfig adds cl's context (endpoint and CA in), with a user entry that runs
// AuthPlugin, to the kubeconfig and makes it current, as `gcloud container clusters
// get-credentials` does, merged with client-go's clientcmd: the other contexts, clusters
// and users stay as they were. The file is made 0600.
func WriteKubeconfig(po *clientcmd.PathOptions, cl Cluster, in Info) (KubeconfigResult, error) {
	name := cl.Context()
	res := KubeconfigResult{Path: po.GetDefaultFilename(), Context: name}
	res.Plugin, _ = exec.LookPath(AuthPlugin)
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return res, fmt.Errorf("the kubeconfig %s cannot be read as one (`kubectl config view` says where): fix or move the file, or set KUBECONFIG to another, then run the command again", res.Path)
	}
	want := clientcmdapi.Cluster{Server: "https://" + in.Endpoint, CertificateAuthorityData: in.CA}
	wantUser := clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1beta1", Command: AuthPlugin,
		InstallHint: authPluginHint, ProvideClusterInfo: true, InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode}
	res.Changed = cfg.CurrentContext != name || clusterDiffers(cfg.Clusters[name], want) ||
		userDiffers(cfg.AuthInfos[name], wantUser) || contextDiffers(cfg.Contexts[name], name)
	if res.Changed {
		setContext(cfg, name, want, wantUser)
		if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
			return res, fmt.Errorf("write the kubeconfig %s: %v (check that its directory is writable, or set KUBECONFIG to another file)", res.Path, err)
		}
	}
	if err := os.Chmod(res.Path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("make the kubeconfig %s readable by you alone: %v", res.Path, err)
	}
	return res, nil
}

func clusterDiffers(old *clientcmdapi.Cluster, want clientcmdapi.Cluster) bool {
	return old == nil || old.Server != want.Server || !bytes.Equal(old.CertificateAuthorityData, want.CertificateAuthorityData)
}

func userDiffers(old *clientcmdapi.AuthInfo, want clientcmdapi.ExecConfig) bool {
	return old == nil || old.Exec == nil || old.Exec.Command != AuthPlugin || old.Exec.APIVersion != want.APIVersion || old.Token != ""
}

func contextDiffers(old *clientcmdapi.Context, name string) bool {
	return old == nil || old.Cluster != name || old.AuthInfo != name || !written(old)
}

// setContext writes context, cluster and user name into cfg and makes the context the
// current one; a namespace the user chose for it stays.
func setContext(cfg *clientcmdapi.Config, name string, want clientcmdapi.Cluster, wantUser clientcmdapi.ExecConfig) {
	c := clientcmdapi.NewCluster()
	c.Server, c.CertificateAuthorityData = want.Server, want.CertificateAuthorityData
	u := clientcmdapi.NewAuthInfo()
	u.Exec = &wantUser
	x := clientcmdapi.NewContext()
	x.Cluster, x.AuthInfo = name, name
	if oldCtx := cfg.Contexts[name]; oldCtx != nil {
		x.Namespace = oldCtx.Namespace
	}
	x.Extensions[Extension] = &runtime.Unknown{Raw: []byte(`"kinetic"`), ContentType: runtime.ContentTypeJSON}
	cfg.Clusters[name], cfg.AuthInfos[name], cfg.Contexts[name] = c, u, x
	cfg.CurrentContext = name
}

// Written reports whether kinetic wrote the context name of the kubeconfig at path
// (KubeconfigAccess's rules): it carries Extension.
func Written(path, name string) bool {
	cfg, err := KubeconfigAccess(path).GetStartingConfig()
	if err != nil {
		return false
	}
	x := cfg.Contexts[name]
	return x != nil && written(x)
}

func written(x *clientcmdapi.Context) bool {
	_, ok := x.Extensions[Extension]
	return ok
}

// RemoveKubeconfig removes cl's context, cluster and user entries when kinetic wrote
// them (a context gcloud or the user wrote stays), and the current context when it was
// that one. It reports whether it removed anything.
func RemoveKubeconfig(po *clientcmd.PathOptions, cl Cluster) (bool, error) {
	name := cl.Context()
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return false, fmt.Errorf("the kubeconfig %s cannot be read as one (`kubectl config view` says where): fix or move the file, then run the command again", po.GetDefaultFilename())
	}
	x := cfg.Contexts[name]
	if x == nil || !written(x) {
		return false, nil
	}
	delete(cfg.Contexts, name)
	delete(cfg.Clusters, name)
	delete(cfg.AuthInfos, name)
	if cfg.CurrentContext == name {
		cfg.CurrentContext = ""
	}
	if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
		return false, fmt.Errorf("write the kubeconfig %s: %v", po.GetDefaultFilename(), err)
	}
	return true, nil
}
