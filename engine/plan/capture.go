package plan

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kinetic-run/kinetic/errs"
)

// envBlocklist are variables a wildcard capture never takes: they describe this
// machine, not the job, and would break the worker's environment. It holds every name
// the reference blocks (TEMP, TMP and KERAS_BACKEND among them: a client's
// KERAS_BACKEND=torch swept in by KERAS_* would override the image's jax); naming one
// exactly still captures it. JAX_PLATFORMS too: the pod's value is set for its hardware
// (docs/images.md, "The runtime layer").
var envBlocklist = []string{"PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "HOSTNAME", "TERM", "TMPDIR", "TEMP", "TMP", "KERAS_BACKEND", "JAX_PLATFORMS", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SHLVL", "_", "DISPLAY", "SSH_AUTH_SOCK", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "LANG", "KINETIC_OUTPUT_DIR", "KINETIC_JOB_ID", "KINETIC_HOST_INDEX"}
var envBlockPrefixes = []string{"LD_", "CONDA_", "PYENV_", "XDG_", "DBUS_", "KUBERNETES_"}

var secretName = regexp.MustCompile(`(?i)TOKEN|SECRET|KEY|PASSWORD|PASSWD|CREDENTIAL`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$|^\*$`)

func blocked(name string) bool {
	for _, b := range envBlocklist {
		if name == b {
			return true
		}
	}
	for _, p := range envBlockPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// captureEnv selects the variables named by patterns (exact names, PREFIX*, or * for
// all but the blocklist) from environ (default: this process's environment).
func captureEnv(patterns []string, environ map[string]string, warn func(string)) (map[string]string, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	if environ == nil {
		environ = osEnviron()
	}
	out := map[string]string{}
	var skipped []string
	for _, p := range patterns {
		s, err := capturePattern(p, environ, out)
		if err != nil {
			return nil, err
		}
		skipped = append(skipped, s...)
	}
	if warn != nil {
		warnBlocked(out, skipped, warn)
		warnSecrets(out, warn)
	}
	return out, nil
}

// osEnviron is this process's environment.
func osEnviron() map[string]string {
	environ := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			environ[k] = v
		}
	}
	return environ
}

// capturePattern adds to out the variables of environ pattern p names, and returns the
// blocked ones its wildcard matched.
func capturePattern(p string, environ, out map[string]string) (skipped []string, err error) {
	if !envName.MatchString(p) {
		return nil, errs.Errorf(errs.InvalidArgument, "capture_env_vars: %q is not a variable name or a PREFIX* pattern", p)
	}
	prefix, wild := strings.CutSuffix(p, "*")
	for k, v := range environ {
		switch {
		case !wild && k == p:
			out[k] = v
		case wild && strings.HasPrefix(k, prefix) && !blocked(k):
			out[k] = v
		case wild && strings.HasPrefix(k, prefix):
			skipped = append(skipped, k)
		}
	}
	return skipped, nil
}

// warnBlocked warns of the blocked names a wildcard matched and no exact name took.
func warnBlocked(out map[string]string, skipped []string, warn func(string)) {
	var left []string
	for _, k := range skipped {
		if _, ok := out[k]; !ok && !slices.Contains(left, k) {
			left = append(left, k)
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		warn(fmt.Sprintf("capture_env_vars: not capturing %s, matched by a wildcard: they describe this machine and would override the job's own values; name one exactly in capture_env_vars to send it anyway", strings.Join(left, ", ")))
	}
}

// warnSecrets warns of the captured names that look like secrets.
func warnSecrets(out map[string]string, warn func(string)) {
	var secrets []string
	for k := range out {
		if secretName.MatchString(k) {
			secrets = append(secrets, k)
		}
	}
	if len(secrets) > 0 {
		sort.Strings(secrets)
		warn(fmt.Sprintf("capturing %s, which look like secrets: their values travel with the job (never in logs, specs or handles)", strings.Join(secrets, ", ")))
	}
}

// captureStep takes the captured environment values now, so a bad pattern writes
// nothing; the spec records their names only.
func captureStep(ctx context.Context, env Env, req *Request, p *Job) error {
	var err error
	if p.Env, err = captureEnv(req.CaptureEnv, req.Environ, env.Warning); err != nil {
		return err
	}
	for k := range p.Env {
		p.Spec.EnvNames = append(p.Spec.EnvNames, k)
	}
	sort.Strings(p.Spec.EnvNames)
	return nil
}
