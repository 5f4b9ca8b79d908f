package server

import (
	"errors"
	"strings"

	"github.com/kinetic-run/kinetic/engine"
)

type stringsBuilder = strings.Builder

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }
