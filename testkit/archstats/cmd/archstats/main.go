// Command archstats prints the numbers docs/architecture.md quotes (lines per package,
// dependency counts, binary sizes: testkit/archstats) as the doc's table; with -w it
// rewrites the table in the doc. Run it from the module's root:
//
//	go run ./testkit/archstats/cmd/archstats [-w docs/architecture.md] [-bin=false]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/kinetic-run/kinetic/testkit/archstats"
)

func main() {
	write := flag.String("w", "", "rewrite the table in this doc (docs/architecture.md)")
	bins := flag.Bool("bin", true, "build the two binaries and measure their sizes")
	flag.Parse()
	stats, err := archstats.Measure(".", *bins)
	if err != nil {
		log.Fatal(err)
	}
	if *write == "" {
		fmt.Print(archstats.Table(stats))
		return
	}
	b, err := os.ReadFile(*write)
	if err != nil {
		log.Fatal(err)
	}
	doc, err := archstats.Replace(string(b), stats)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*write, []byte(doc), 0o644); err != nil {
		log.Fatal(err)
	}
}
