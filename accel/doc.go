// Package accel turns accelerator names ("l4", "a100x4", "tpu-v6e-8", "tpu:16:spot")
// into a Spec: the hardware a job asks for and the Kubernetes facts (node selectors,
// tolerations, resource requests) needed to schedule it on GKE.
//
// The catalog is fixed data taken from GKE's published accelerator and TPU tables; it
// is not discovered at run time, so a name is validated before anything is built or
// uploaded, and a mistyped name fails with the closest valid names.
//
// See docs/accelerators.md for the grammar and the full catalog.
package accel
