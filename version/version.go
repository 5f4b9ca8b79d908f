// Package version is the kinetic version, stamped at build time with
// -ldflags "-X github.com/kinetic-run/kinetic/version.Version=v0.2.0". It is part of every
// environment key, so a new runner never reuses an environment built for an older one.
package version

// Version is the kinetic version. The Python SDK's kinetic.__version__ and the package
// version in python/pyproject.toml are the same string (TestSameVersionEverywhere).
var Version = "0.1.0"
