//go:build tools

// Package lwstools pins the LeaderWorkerSet controller that the test cluster runs for
// the Pathways backend. It is its own module so that the product never depends on
// sigs.k8s.io/lws (the backend speaks to the CRD through the dynamic client).
package lwstools

import _ "sigs.k8s.io/lws/cmd"
