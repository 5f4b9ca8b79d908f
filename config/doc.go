// Package config resolves Kinetic's settings and manages named profiles.
//
// Every setting (project, zone, cluster, namespace, backend, store URL, ...) is a Key.
// Resolve finds each key's value in one fixed order, first hit wins:
//
//  1. an explicit argument (a flag, or an option passed to the SDK),
//  2. the KINETIC_<KEY> environment variable,
//  3. the active profile in the profiles file,
//  4. a built-in default (or, for a few keys, a well-known variable such as
//     GOOGLE_CLOUD_PROJECT).
//
// and records where the value came from, so "kinetic config show" can explain it.
//
// Profiles live in one JSON file (~/.kinetic/profiles.json, or KINETIC_PROFILES_FILE)
// whose format is compatible with the reference implementation's. The file is rewritten
// atomically, so a crash or a full disk never leaves a half-written file behind.
package config
