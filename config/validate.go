package config

import (
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/config/backendnames"
	"github.com/kinetic-run/kinetic/config/storeschemes"
	"github.com/kinetic-run/kinetic/errs"
)

// Backends are the accepted values of the backend key: the names of the backends linked
// into this program (backend.Register), sorted.
func Backends() []string { return backendnames.List() }

// RuntimeLayers are the accepted values of runtime_layer: jax (the default) or none.
var RuntimeLayers = []string{"jax", "none"}

// ImageBuilders are the accepted values of image_builder: auto is daemonless, falling
// back to a local engine (podman, then docker) for requirements without wheels.
var ImageBuilders = []string{"auto", "daemonless", "podman", "docker", "cloudbuild"}

// Containers are the accepted values of container (local container isolation): auto
// uses podman or docker when one is installed; none (the default) runs in a local
// virtualenv.
var Containers = []string{"none", "auto", "podman", "docker"}

// ErrInvalid is wrapped by every ValueError, for callers that only need to branch.
var ErrInvalid = errs.New(errs.InvalidArgument, "invalid configuration value")

// ValueError reports a value that failed validation, and where it came from, so the user
// knows which flag, variable or profile to fix.
type ValueError struct {
	Key    Key
	Value  string
	Source string // as Resolved.Source; "" when validating outside Resolve
	Reason string
}

func (e *ValueError) Error() string {
	from := ""
	if e.Source != "" {
		from = " (from " + e.Source + ")"
	}
	return fmt.Sprintf("invalid %s %q%s: %s", e.Key, e.Value, from, e.Reason)
}

func (e *ValueError) Unwrap() error { return ErrInvalid }

// Validate checks v as a value of k and returns its normal form (an absolute store path
// becomes a file:// URL). Empty values are valid: they mean "not set".
func Validate(k Key, v string) (string, error) {
	ki, ok := lookup(k)
	if !ok {
		return "", fmt.Errorf("unknown configuration key %q (keys: %s)", k, keyList())
	}
	v = strings.TrimSpace(v)
	if v == "" || ki.check == nil {
		return v, nil
	}
	nv, err := ki.check(v)
	if err != nil {
		return "", &ValueError{Key: k, Value: v, Reason: err.Error()}
	}
	return nv, nil
}

func keyList() string {
	var s []string
	for _, k := range Keys() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func oneOf(choices []string) func(string) (string, error) {
	return func(v string) (string, error) {
		if !slices.Contains(choices, v) {
			return "", fmt.Errorf("must be one of %s", strings.Join(choices, ", "))
		}
		return v, nil
	}
}

var (
	checkBackend      = func(v string) (string, error) { return oneOf(Backends())(v) }
	checkImageBuilder = oneOf(ImageBuilders)
	checkRuntimeLayer = oneOf(RuntimeLayers)
	checkContainer    = oneOf(Containers)
)

// dns1123Label is the Kubernetes rule for namespace names (RFC 1123 label).
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func checkNamespace(v string) (string, error) {
	if len(v) > 63 || !dns1123Label.MatchString(v) {
		return "", errors.New("a namespace must be at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit")
	}
	return v, nil
}

// checkStore accepts a store URL, or an absolute path, which it turns into a file:// URL
// so everything downstream deals with URLs only.
func checkStore(v string) (string, error) {
	if filepath.IsAbs(v) {
		return fileURL(v), nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("must be a URL with scheme %s, or an absolute path", schemeList())
	}
	check, ok := storeschemes.Lookup(u.Scheme)
	if !ok {
		return "", fmt.Errorf("unsupported scheme %q: must be one of %s", u.Scheme, schemeList())
	}
	if err := check(u); err != nil {
		return "", err
	}
	return v, nil
}

// schemeList is the store schemes this program links (store/driver registers them).
func schemeList() string {
	var s []string
	for _, sc := range storeschemes.List() {
		s = append(s, sc+"://")
	}
	return strings.Join(s, ", ")
}

// fileURL turns an absolute path into a file:// URL, escaping what a URL must escape
// (spaces, '#', '?') so the store driver gets the same path back.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func checkHTTPURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("must be an http:// or https:// URL")
	}
	return v, nil
}

func checkDuration(v string) (string, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return "", fmt.Errorf("%q is not a positive duration (write it like 90s, 10m or 1h)", v)
	}
	return d.String(), nil
}

// quantityPattern is the Kubernetes resource quantity grammar (number, optional suffix).
var quantityPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

func checkQuantity(v string) (string, error) {
	v = strings.TrimSpace(v)
	if !quantityPattern.MatchString(v) {
		return "", fmt.Errorf("%q is not a Kubernetes quantity (write it like 500m, 2, 512Mi or 4Gi)", v)
	}
	return v, nil
}

func checkPositiveInt(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return "", fmt.Errorf("%q is not a whole number of at least 1", v)
	}
	return strconv.Itoa(n), nil
}

// checkSizeMB accepts a size in MiB, 0 included (0 turns a warning off).
func checkSizeMB(v string) (string, error) {
	mb, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || mb < 0 || mb > 1<<40 {
		return "", fmt.Errorf("%q is not a size in MiB (write it like 100, or 0 for never)", v)
	}
	return strconv.FormatFloat(mb, 'f', -1, 64), nil
}

// checkLocalPath accepts a directory path as a person writes it: absolute, relative (to
// the working directory of the call that uses it) or starting with "~"; the user of the
// setting expands it (ExpandPath), as the reference's os.path.abspath(expanduser()) does.
func checkLocalPath(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("is empty: give a directory")
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		return "~" + filepath.Clean("/"+v[1:]), nil
	}
	return filepath.Clean(v), nil
}

// ExpandPath makes a value checkLocalPath accepted absolute: "~" is home, a relative path
// is taken from cwd.
func ExpandPath(v, cwd, home string) string {
	if v == "~" || strings.HasPrefix(v, "~/") {
		return filepath.Join(home, v[1:])
	}
	if !filepath.IsAbs(v) {
		return filepath.Join(cwd, v)
	}
	return v
}

// checkExecutable accepts an absolute path to an executable file, or a command name
// found on PATH, so a typo fails before a job is written rather than inside it.
func checkExecutable(v string) (string, error) {
	v = strings.TrimSpace(v)
	p, err := exec.LookPath(v)
	if err != nil {
		return "", fmt.Errorf("%q is not an executable file (give its absolute path, or a command on PATH)", v)
	}
	if !filepath.IsAbs(v) && strings.ContainsRune(v, filepath.Separator) {
		return filepath.Abs(p)
	}
	return v, nil
}

func checkBool(v string) (string, error) {
	// yes/no and on/off too: KINETIC_NO_DEFAULT_EXCLUDES=yes predates this table.
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "on":
		return "true", nil
	case "no", "off":
		return "false", nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return "", fmt.Errorf("%q is not true or false", v)
	}
	return strconv.FormatBool(b), nil
}
