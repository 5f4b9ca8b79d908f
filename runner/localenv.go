package runner

import "strings"

// localEnvNames are the variables of this machine a local job keeps (Options.MinimalEnv)
// besides those LocalEnvKept keeps by prefix: where programs and files are, who and
// where the user is, the terminal, and this machine's network and devices, which a pod
// has from its node and image.
var localEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "LANG": true, "LANGUAGE": true,
	"TMPDIR": true, "TZ": true, "TERM": true, "GLIBC_TUNABLES": true,
	"VIRTUAL_ENV": true, "CONDA_PREFIX": true, "CONDA_DEFAULT_ENV": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "http_proxy": true, "https_proxy": true, "no_proxy": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "REQUESTS_CA_BUNDLE": true,
	"CUDA_VISIBLE_DEVICES": true,
}

// localEnvPrefixes are kept whole: what the interpreter, the dynamic loader and libc
// read when they start (the Python the job needs, and what warm workers must share with
// the job: runner/warm.go's startupVar), the locale, the XDG directories, the GPU
// runtime's, and Kinetic's own settings (KINETIC_*).
var localEnvPrefixes = []string{"PYTHON", "LD_", "LC_", "MALLOC_", "XDG_", "NVIDIA_", "KINETIC_"}

// LocalEnvKept reports whether a local job keeps this machine's variable name when the
// runner gives it a minimal environment (Options.MinimalEnv). Everything else (an API
// key, KERAS_BACKEND, a setting of the user's program) reaches a job only through
// capture_env_vars, on every backend alike.
func LocalEnvKept(name string) bool {
	if localEnvNames[name] {
		return true
	}
	for _, p := range localEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
