package server

import (
	"errors"

	"github.com/kinetic-run/kinetic/engine"
)

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }
