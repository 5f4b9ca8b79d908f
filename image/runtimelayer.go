package image

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RuntimeProjects are the project names of RuntimeRequirements(category): the roots of
// the runtime layer's own image layer (BuildRequest.Runtime).
func RuntimeProjects(category string) []string {
	var out []string
	for _, l := range MustRuntimeRequirements(category) {
		n := l
		if i := strings.IndexAny(n, "[=<>!~ ;"); i >= 0 {
			n = n[:i]
		}
		out = append(out, normalize(n))
	}
	return out
}

// splitRuntime divides the chosen wheels into those the runtime projects need (the
// roots and, transitively, every chosen wheel a Requires-Dist of theirs names, whatever
// its marker: a name only counts when its wheel was chosen) and the rest.
func splitRuntime(ws []wheelFile, roots []string) (runtime, rest []wheelFile, err error) {
	byName := map[string]wheelFile{}
	for _, w := range ws {
		byName[w.project] = w
	}
	in := map[string]bool{}
	var queue []string
	// add queues chosen project n once.
	add := func(n string) {
		if _, ok := byName[n]; ok && !in[n] {
			in[n] = true
			queue = append(queue, n)
		}
	}
	for _, r := range roots {
		add(normalize(r))
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		deps, err := wheelRequires(byName[n].path)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range deps {
			add(d)
		}
	}
	for _, w := range ws {
		if in[w.project] {
			runtime = append(runtime, w)
		} else {
			rest = append(rest, w)
		}
	}
	return runtime, rest, nil
}

// wheelRequires lists the (normalised) project names a wheel's METADATA requires.
func wheelRequires(p string) ([]string, error) {
	zr, err := zip.OpenReader(p)
	if err != nil {
		return nil, fmt.Errorf("wheel %s: %w", p, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		top, rest, _ := strings.Cut(f.Name, "/")
		if !strings.HasSuffix(top, ".dist-info") || rest != "METADATA" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		var out []string
		sc := bufio.NewScanner(io.LimitReader(rc, 4<<20))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "requires-dist") {
				if m := requiresRE.FindStringSubmatch(strings.TrimSpace(v)); m != nil {
					out = append(out, normalize(m[1]))
				}
			}
		}
		return out, sc.Err()
	}
	return nil, nil
}

// layersOfWheels lays the chosen wheels out as layerOfWheels does, in two layers when
// runtime names projects among them and others are there too: the runtime's wheels
// (splitRuntime) first, the user's over them. Images with the same runtime wheels then
// share that layer's blob, in the registry and on the nodes, whatever the user's
// requirements: a new requirement uploads and pulls only its own. Files of the two sets
// that overlap are errNotSimple, as within one set.
func layersOfWheels(ws []wheelFile, runtime []string, t Target, work string, mt types.MediaType) ([]*fileLayer, error) {
	rt, user, err := splitRuntime(ws, runtime)
	if err != nil {
		return nil, err
	}
	if len(rt) == 0 || len(user) == 0 {
		l, err := layerOfWheels(ws, t, filepath.Join(work, "site.tar.gz"), mt)
		if err != nil {
			return nil, err
		}
		return []*fileLayer{l}, nil
	}
	_, closeAll, err := wheelEntries(ws, SitePackages, t.Python)
	if err != nil {
		return nil, err
	}
	closeAll()
	a, err := layerOfWheels(rt, t, filepath.Join(work, "runtime.tar.gz"), mt)
	if err != nil {
		return nil, err
	}
	b, err := layerOfWheels(user, t, filepath.Join(work, "site.tar.gz"), mt)
	if err != nil {
		return nil, err
	}
	return []*fileLayer{a, b}, nil
}
