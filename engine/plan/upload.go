package plan

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/pack"
)

// UploadSize is what a job would upload at most: its shipped working directory and its
// local Data, before the store is asked what it holds already (content that is there is
// not uploaded again).
type UploadSize struct {
	// Workdir is the shipped root ("" when none is shipped), WorkdirBytes its files.
	Workdir      string
	WorkdirBytes int64
	// Data are the local Data paths, with their bytes.
	Data []PathSize
	// Threshold is upload_confirm_mb in bytes: Total is above it.
	Threshold int64
}

// PathSize is a local path and the bytes of the regular files under it.
type PathSize struct {
	Path  string
	Bytes int64
}

// Total is the bytes of the working directory and the Data together.
func (u UploadSize) Total() int64 {
	n := u.WorkdirBytes
	for _, d := range u.Data {
		n += d.Bytes
	}
	return n
}

// String says what makes up the upload: "2.0 GiB (the working directory /w: 1.5 GiB;
// Data /d: 512 MiB)".
func (u UploadSize) String() string {
	var parts []string
	if u.Workdir != "" {
		parts = append(parts, fmt.Sprintf("the working directory %s: %s", u.Workdir, pack.HumanBytes(u.WorkdirBytes)))
	}
	for _, d := range u.Data {
		parts = append(parts, fmt.Sprintf("Data %s: %s", d.Path, pack.HumanBytes(d.Bytes)))
	}
	return fmt.Sprintf("%s (%s)", pack.HumanBytes(u.Total()), strings.Join(parts, "; "))
}

// confirmUpload asks req.ConfirmUpload (kinetic run: a prompt, or --yes) before a job
// whose working directory and local Data are larger than upload_confirm_mb is written;
// nothing is in the store yet, so a refusal leaves nothing behind. Without
// ConfirmUpload (the SDK: the call is the consent) it asks nothing.
func confirmUpload(ctx context.Context, env Env, req *Request, p *Job) error {
	if req.ConfirmUpload == nil {
		return nil
	}
	mb, _ := strconv.ParseFloat(p.Cfg.Get(config.UploadConfirmMB), 64)
	if mb <= 0 {
		return nil
	}
	u := UploadSize{Workdir: p.Root, Threshold: int64(mb * (1 << 20))}
	if p.Manifest != nil {
		u.WorkdirBytes = p.Manifest.TotalBytes()
	}
	for _, r := range p.Spec.Data {
		if r.Kind.IsLocal() && !r.Fuse { // local fuse=True Data is used in place
			u.Data = append(u.Data, PathSize{Path: r.Path, Bytes: treeBytes(r.Path)})
		}
	}
	if u.Total() <= u.Threshold {
		return nil
	}
	return req.ConfirmUpload(ctx, u)
}

// treeBytes is the bytes of the regular files at or under path (symlinks not followed).
func treeBytes(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
