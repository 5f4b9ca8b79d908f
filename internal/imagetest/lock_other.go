//go:build !unix

package imagetest

import "errors"

func lockFile(string) (func(), error) { return nil, errors.New("file locks need a unix system") }
