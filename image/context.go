package image

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// buildContext writes a build directory for engines that build from a Dockerfile
// (podman, docker, Cloud Build): the Dockerfile, the requirement and constraint files,
// local --find-links directories copied in (their lines rewritten to the copies), and
// the runner binary.
func buildContext(ctx context.Context, c *Client, req *BuildRequest, dir string) error {
	lines, err := contextRequirements(req.Requirements, dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "constraints.txt"), []byte(strings.Join(req.Constraints, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\n", req.Base.Name())
	if len(req.Requirements) > 0 {
		df.WriteString("COPY requirements.txt constraints.txt /kinetic/build/\n")
		df.WriteString("COPY links/ /kinetic/build/links/\n")
		fmt.Fprintf(&df, "RUN python3 -m pip install --no-cache-dir --disable-pip-version-check --no-input --target %s -r /kinetic/build/requirements.txt -c /kinetic/build/constraints.txt && rm -rf /kinetic/build\n", SitePackages)
		pp := SitePackages
		if old := basePythonPath(ctx, c, req); old != "" {
			pp += ":" + old
		}
		fmt.Fprintf(&df, "ENV PYTHONPATH=%s\n", pp)
	}
	keys := make([]string, 0, len(req.Labels))
	for k := range req.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&df, "LABEL %q=%q\n", k, req.Labels[k])
	}
	return os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df.String()), 0o644)
}

// contextRequirements are the requirement lines with local --find-links directories
// copied into dir/links (their lines rewritten to the copies); dir/links is made
// either way.
func contextRequirements(reqs []string, dir string) ([]string, error) {
	lines := make([]string, 0, len(reqs))
	nlinks := 0
	for _, l := range reqs {
		if val, ok := localFindLinks(l); ok {
			dst := filepath.Join(dir, "links", fmt.Sprint(nlinks))
			if err := copyDir(val, dst); err != nil {
				return nil, fmt.Errorf("copy --find-links %s into the build context: %w", val, err)
			}
			l = fmt.Sprintf("--find-links /kinetic/build/links/%d", nlinks)
			nlinks++
		}
		lines = append(lines, l)
	}
	if nlinks == 0 {
		os.MkdirAll(filepath.Join(dir, "links"), 0o755)
	}
	return lines, nil
}

// localFindLinks is the directory of a "--find-links DIR" line whose DIR is an
// absolute path to a directory here.
func localFindLinks(l string) (string, bool) {
	opt, val, ok := strings.Cut(l, " ")
	val = strings.Trim(strings.TrimSpace(val), `'"`)
	if !ok || opt != "--find-links" || !filepath.IsAbs(val) {
		return "", false
	}
	fi, err := os.Stat(val)
	return val, err == nil && fi.IsDir()
}

// basePythonPath is the base image's PYTHONPATH ("" when unset or unknown).
func basePythonPath(ctx context.Context, c *Client, req *BuildRequest) string {
	img, err := remote.Image(req.Base, c.Options(ctx, remote.WithPlatform(req.platform()))...)
	if err != nil {
		return ""
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return ""
	}
	for _, kv := range cf.Config.Env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			return v
		}
	}
	return ""
}

func copyDir(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		return copyFile(p, t, fi.Mode().Perm())
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
