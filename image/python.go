package image

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ConfigPython returns the Python minor version ("3.12") the configuration of ref (for
// linux/GOARCH) names: its run.kinetic.python-version label or its PYTHON_VERSION env
// (the official python images set it). It reads the manifest and the configuration
// only, never a layer; ok is false when the configuration does not say.
func (c *Client) ConfigPython(ctx context.Context, ref name.Reference) (python string, ok bool, err error) {
	img, err := remote.Image(ref, c.Options(ctx, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))...)
	if err != nil {
		return "", false, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", false, err
	}
	t, ok := targetFromConfig(cf)
	return t.Python, ok, nil
}

// CustomPython remembers, per process, the Python of the custom images it was asked
// about, so that a custom image costs its configuration read once.
type CustomPython struct {
	Client *Client
	mu     sync.Mutex
	seen   map[string]string // ref → Python ("" = unknown)
}

// Python returns the Python minor version of the custom image ref as its configuration
// says, or "" when it does not say or cannot be read (unreachable, no credentials):
// callers only warn with it.
func (p *CustomPython) Python(ctx context.Context, ref name.Reference) string {
	p.mu.Lock()
	if v, ok := p.seen[ref.Name()]; ok {
		p.mu.Unlock()
		return v
	}
	p.mu.Unlock()
	c := p.Client
	if c == nil {
		c = &Client{}
	}
	// A warning is not worth a slow submission: a registry that does not answer soon
	// leaves the image's Python unknown.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	py, ok, err := c.ConfigPython(ctx, ref)
	if err != nil || !ok {
		py = ""
	}
	p.mu.Lock()
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	p.seen[ref.Name()] = py
	p.mu.Unlock()
	return py
}
