//go:build tools

package gcstest

// The emulator's main package, so that this module's go.mod pins its version (Version)
// and the build in binary() compiles it with the module's own dependencies.
import _ "github.com/fsouza/fake-gcs-server"
