// Package image resolves and builds the container image a job runs in.
//
// The mode comes from the call's container_image (ParseChoice):
//
//   - Bundled ("" or "bundled", the default): the image is tagged with the environment
//     key (deps.EnvKey over the filtered requirements, the base image, the accelerator
//     category and the runner version), in the configured image registry. Ensure looks
//     the tag up with one registry request (Lookup) and builds only on a miss; concurrent
//     submissions of one key build once (singleflight in a process, a file lock and a
//     second lookup across processes on one machine, the registry lookup across machines).
//   - Prebuilt ("prebuilt"): {base_image_repo}/base-{cpu|gpu|tpu}:{version}-py{3.X}, for
//     the client's Python; the runner installs the job's filtered requirements when it
//     starts (uv when the image has it, else pip). Publish those bases with BuildBase
//     (`kinetic build-image`).
//
// Bundled images and prebuilt bases get the runtime layer (runtime.go: jax for the
// accelerator, keras, cloudpickle, pinned), resolved with the user's requirements in one
// pass, over a base whose Python is the client's (DefaultBase, or a configured base
// whose Python is checked: PythonMismatchError).
//   - Custom (any other value): an image reference used as is. The runner is injected by
//     the backend, so nothing of Kinetic's has to be inside it.
//
// Builders (Builder) make the bundled image and push it:
//
//   - Daemonless (the default): reads nothing but the base image's manifest and config,
//     picks the wheels for the image's platform and Python (in Go for a closed set of
//     pinned local wheels, else with this machine's pip download: --platform,
//     --python-version, --only-binary=:all:, honouring the index directives), streams
//     them into one layer laid out as pip install --target would, and pushes with
//     go-containerregistry (no kinetic binary: the backends inject theirs at
//     job.RunnerPath). No daemon, no cloud builder.
//   - Engine: podman or docker on this machine (a generated Dockerfile, build, push), for
//     requirements that must compile inside the image.
//   - CloudBuild: the Cloud Build REST API, for GKE users without a local engine.
//
// The layering follows go-containerregistry: references and modes (ref.go, mode.go) →
// registry lookups (lookup.go) → wheels, layers and builders (wheels.go, layer.go,
// pip.go, build.go, enginebuild.go, cloudbuild.go) → the cached, deduplicated Ensure
// (ensure.go). Beside them: the runner image (runner.go), and AddRunner (withrunner.go),
// which makes a built image the Kubernetes pods start the runner from: the same layers
// plus the runner image's own layer, tagged after both digests.
package image
