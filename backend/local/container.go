package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// runnerInImage is where the kinetic binary is mounted in a container (the same path
// bundled images put it at, so custom images need nothing of ours).
const runnerInImage = job.RunnerPath

// containerSpec returns the job's spec when it asks to run in a local container.
func containerSpec(ctx context.Context, st *store.Store, id string) (*job.Spec, bool) {
	b, err := st.Get(ctx, store.SpecKey(id))
	if err != nil {
		return nil, false
	}
	spec, err := job.DecodeSpec(b)
	if err != nil || spec.Container == "" || spec.Image == "" {
		return nil, false
	}
	return spec, true
}

// runInContainer runs the job's runner inside spec.Image with spec.Container (podman or
// docker): network host, the file:// store and a local output directory bind-mounted at
// the same paths, this kinetic binary mounted at job.RunnerPath. The runner in
// the container writes the envelope, logs and result to the store as it does anywhere;
// a container that cannot start (image pull, engine error) gets an envelope here.
func runInContainer(ctx context.Context, st *store.Store, o SuperviseOptions, id string, spec *job.Spec, log io.Writer) (*job.Envelope, error) {
	storeDir, storeURL, err := containerStore(st.URL())
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	name := "kinetic-" + id
	args := containerArgs(spec, name, storeDir, exe)
	args = append(args, "--entrypoint", runnerInImage, spec.Image,
		"runner", "--store", storeURL, "--job", id, "--workspace", "/tmp/kinetic/"+id)
	fmt.Fprintf(log, "kinetic: %s %s\n", spec.Container, strings.Join(args, " "))

	cmd := exec.Command(spec.Container, args...)
	var tail bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &tail), io.MultiWriter(log, &tail)
	if err := cmd.Start(); err != nil {
		return failed(ctx, st, id, fmt.Sprintf("%s could not start: %v", spec.Container, err)), nil
	}
	runErr := waitContainer(ctx, cmd, spec.Container, name, o.Grace)
	b, err := st.Get(context.WithoutCancel(ctx), store.EnvelopeKey(id))
	if err == nil {
		env, derr := job.DecodeEnvelope(b)
		if derr == nil {
			return env, nil
		}
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	t := tail.String()
	if len(t) > 2000 {
		t = "…" + t[len(t)-2000:]
	}
	return failed(ctx, st, id, fmt.Sprintf("the container of image %s ended without a result (%v): %s", spec.Image, runErr, strings.TrimSpace(t))), nil
}

// containerArgs are the container engine's arguments up to the entrypoint: the store,
// this binary as the runner, the output directory and local --find-links directories
// (prebuilt images install at start) at their paths.
func containerArgs(spec *job.Spec, name, storeDir, exe string) []string {
	args := []string{"run", "--rm", "--name", name, "--network=host", "--pull=missing",
		"-v", storeDir + ":" + storeDir, "-v", exe + ":" + runnerInImage + ":ro",
		"-e", "KINETIC_HOST_INDEX=0"}
	if spec.OutputDir != "" && filepath.IsAbs(spec.OutputDir) && !strings.HasPrefix(spec.OutputDir, storeDir+"/") {
		os.MkdirAll(spec.OutputDir, 0o700)
		args = append(args, "-v", spec.OutputDir+":"+spec.OutputDir)
	}
	if spec.InstallAtStart {
		for _, l := range spec.Requirements {
			if v, ok := findLinksDir(l); ok {
				args = append(args, "-v", v+":"+v+":ro")
			}
		}
	}
	if spec.Container != "docker" && plainHTTP(spec.Image) {
		args = append(args, "--tls-verify=false")
	}
	return args
}

// findLinksDir is the local directory of a "--find-links DIR" requirement line.
func findLinksDir(line string) (string, bool) {
	v, ok := strings.CutPrefix(line, "--find-links ")
	if !ok {
		return "", false
	}
	v = strings.Trim(v, `'"`)
	fi, err := os.Stat(v)
	return v, err == nil && fi.IsDir() && filepath.IsAbs(v)
}

// waitContainer waits for the container engine's process; cancelled, it stops the
// container (SIGTERM, SIGKILL after the grace period).
func waitContainer(ctx context.Context, cmd *exec.Cmd, engine, name string, grace time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		exec.Command(engine, "stop", "--time", strconv.Itoa(int(grace/time.Second)), name).Run()
		return <-done
	}
}

// failed records and returns an envelope for a job whose container never ran it.
func failed(ctx context.Context, st *store.Store, id, msg string) *job.Envelope {
	env := &job.Envelope{Success: false, Phase: "system", ExcType: "ContainerError", ExcMessage: msg}
	st.Put(context.WithoutCancel(ctx), store.EnvelopeKey(id), env.Encode())
	return env
}

// containerStore returns the directory to mount and the URL the runner uses: local
// container isolation needs a file:// store (the same path inside and out).
func containerStore(u string) (dir, storeURL string, err error) {
	p, perr := url.Parse(u)
	if perr != nil || p.Scheme != "file" {
		return "", "", fmt.Errorf("local container isolation needs a file:// store, not %s: use the default store or set container=none", u)
	}
	return filepath.Clean(p.Path), u, nil
}

// plainHTTP reports whether ref's registry is on a loopback address.
func plainHTTP(ref string) bool {
	host, _, _ := strings.Cut(ref, "/")
	h := host
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "[::1]"
}
