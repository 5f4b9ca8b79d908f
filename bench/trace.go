package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// traceMark is one line of the KINETIC_TRACE file (internal/calltrace).
type traceMark struct {
	us    int64
	pid   int
	phase string
	id    string
}

func readTrace(path string) ([]traceMark, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []traceMark
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		us, err1 := strconv.ParseInt(fs[0], 10, 64)
		pid, err2 := strconv.Atoi(fs[1])
		if err1 != nil || err2 != nil {
			continue
		}
		m := traceMark{us: us, pid: pid, phase: fs[2]}
		if len(fs) > 3 {
			m.id = fs[3]
		}
		ms = append(ms, m)
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].us < ms[j].us })
	return ms, sc.Err()
}

// phaseTable prints where the sync calls' time went: the marks between one "sdk.call"
// and the next, each phase's median time since the call, and since the phase before it
// (phases in the order of their medians). The first call (the engine's start) is skipped.
func phaseTable(path string) {
	ms, err := readTrace(path)
	check(err)
	var calls [][]traceMark
	for _, m := range ms {
		if m.phase == "bench.map" {
			break // the map's marks follow (mapTable)
		}
		if m.phase == "sdk.call" {
			calls = append(calls, nil)
		}
		if len(calls) > 0 {
			calls[len(calls)-1] = append(calls[len(calls)-1], m)
		}
	}
	if len(calls) < 2 {
		fmt.Println("\n(no trace marks)")
		return
	}
	calls = calls[1:]
	offs := map[string][]float64{}
	for _, c := range calls {
		t0 := c[0].us
		seen := map[string]bool{}
		for _, m := range c {
			if seen[m.phase] {
				continue
			}
			seen[m.phase] = true
			offs[m.phase] = append(offs[m.phase], float64(m.us-t0)/1e3)
		}
	}
	type row struct {
		phase string
		med   float64
		n     int
	}
	var rows []row
	for p, xs := range offs {
		rows = append(rows, row{p, stats(xs)[0], len(xs)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].med < rows[j].med })
	fmt.Printf("\nWhere a sync call's time goes (%d calls; KINETIC_TRACE marks, medians in ms since the SDK's call):\n\n", len(calls))
	fmt.Println("| phase mark | since the call | since the mark before |")
	fmt.Println("|---|---|---|")
	prev := 0.0
	for _, r := range rows {
		name := r.phase
		if r.n < len(calls) {
			name += fmt.Sprintf(" (in %d calls)", r.n) // a path only some calls take
		}
		fmt.Printf("| %s | %.2f | %.2f |\n", name, r.med, r.med-prev)
		prev = r.med
	}
}

// mapTable prints the map's marks (the last map in the file) as times since the SDK's
// run_async_map: for each phase the first and the last time it was marked, and how often.
func mapTable(path string) {
	ms, err := readTrace(path)
	check(err)
	start := -1
	for i, m := range ms {
		if m.phase == "bench.map" {
			start = i
		}
	}
	if start < 0 {
		fmt.Println("\n(no map marks)")
		return
	}
	t0 := ms[start].us
	type row struct {
		phase       string
		first, last float64
		n           int
	}
	byPhase := map[string]*row{}
	var rows []*row
	for _, m := range ms[start:] {
		t := float64(m.us-t0) / 1e3
		r := byPhase[m.phase]
		if r == nil {
			r = &row{phase: m.phase, first: t}
			byPhase[m.phase] = r
			rows = append(rows, r)
		}
		r.last, r.n = t, r.n+1
		if m.phase == "bench.map.results" {
			break
		}
	}
	fmt.Println("\nWhere the map's time goes (KINETIC_TRACE marks, ms since run_async_map was called):")
	fmt.Println()
	fmt.Println("| phase mark | first | last | marks |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %.1f | %.1f | %d |\n", r.phase, r.first, r.last, r.n)
	}
}
