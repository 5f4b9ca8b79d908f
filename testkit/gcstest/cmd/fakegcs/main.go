// Command fakegcs builds fake-gcs-server at gcstest's pinned version into the tools
// cache (once; see testkit/gcstest) and prints the binary's path, so tests outside Go
// (python/tests) start the same emulator the Go tests use:
//
//	go run ./testkit/gcstest/cmd/fakegcs
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kinetic-run/kinetic/testkit/gcstest"
)

func main() {
	flag.Parse()
	bin, err := gcstest.Binary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakegcs:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
