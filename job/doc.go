// Package job holds the durable model of one job: its ID, its handle (handle.json), its
// spec (what the runner must do), its status and its result envelope. These types are
// the contract between the submitting machine, the backend and the runner; they carry no
// behaviour beyond encoding, validation and small helpers.
//
// Spec.Image is the container image a job runs in, for backends that run containers:
// a digest reference for bundled images ("REGISTRY/PATH/kinetic-env@sha256:..."), the
// published base for prebuilt ones (with Spec.InstallAtStart set when there are
// requirements to install), or the user's reference for a custom image; Spec.ImageMode
// says which. Backends run `RunnerPath runner --store URL --job ID` in it,
// injecting the kinetic binary at that path (it need not be in the image). "" means the
// job runs without a container (the local backend's default).
package job
