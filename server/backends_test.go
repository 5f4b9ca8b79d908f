package server

// The tests run jobs on the local backend: link it, as cmd/kinetic does.
import _ "github.com/kinetic-run/kinetic/backend/local"
