package parallel

import "golang.org/x/sync/errgroup"

//go:noinline
func sink(b []byte) error {
	if b[0] == 2 {
		return errSink
	}
	return nil
}

var errSink error

func errgroupWithLimit(n int) (*errgroup.Group, struct{}) {
	g := &errgroup.Group{}
	g.SetLimit(n)
	return g, struct{}{}
}
