// Package job holds the durable model of one job: its ID, its handle (handle.json), its
// spec (what the runner must do), its status and its result envelope. These types are
// the contract between the submitting machine, the backend and the runner; they carry no
// behaviour beyond encoding, validation and small helpers.
package job
