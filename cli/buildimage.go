package cli

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/image"
	"github.com/kinetic-run/kinetic/pyenv"
	"github.com/kinetic-run/kinetic/version"
)

// buildImage is one `kinetic build-image`: its flags, then what its steps find.
type buildImage struct {
	g          *Globals
	r          engine.BuildImageRequest
	categories []string
	dockerfile string
	creds      bool // --configure-docker
	login      bool // --update-credentials
	yes        bool
	asJSON     bool
	where      *gkeFlags

	cmd    *cobra.Command
	cats   []string
	e      *engine.Engine
	tty    bool
	repo   name.Repository
	tag    string
	stderr io.Writer
}

// buildImageSteps are build-image's steps, in order; the first error stops it.
var buildImageSteps = []func(b *buildImage) error{
	(*buildImage).checkFlags,
	(*buildImage).openEngine,
	(*buildImage).repository,
	(*buildImage).python,
	(*buildImage).showPlan,
	(*buildImage).reenter,
	(*buildImage).confirm,
	(*buildImage).configureDocker,
	(*buildImage).dockerfileBase,
	(*buildImage).build,
}

func newBuildImageCmd(g *Globals) *cobra.Command {
	b := &buildImage{g: g}
	cmd := &cobra.Command{
		Use:   "build-image [--repo REPO] [--category cpu|gpu|tpu]... [--tag TAG]",
		Short: "Publish prebuilt base images (for container_image=\"prebuilt\")",
		Long: `Build REPO/base-CATEGORY:TAG (TAG defaults to this kinetic's version) for each
category (--category, repeatable or comma-separated; all of cpu, gpu and tpu by default)
from the category's base image (base_image_cpu/gpu/tpu, --base, or the image your
--dockerfile builds) plus the kinetic runner, and push them. No Docker daemon and no cloud
builder are needed (image_builder picks another); --dockerfile needs podman or docker.
Jobs use them with container_image="prebuilt" and base_image_repo=REPO
(KINETIC_BASE_IMAGE_REPO); their requirements are installed when they start.

REPO defaults to base_image_repo; on a terminal it is asked for when there is none. On a
terminal the plan is shown and confirmed first (-y skips that). --update-credentials enters
the registry's credentials again (docker or podman login on this terminal); Artifact
Registry and Container Registry take your Application Default Credentials instead.
--configure-docker makes gcloud the Docker credential helper of such a host (as gcloud
auth configure-docker does) before pushing.`,
		Example: "  kinetic build-image --repo us-docker.pkg.dev/my-project/kinetic --category gpu\n" +
			"  kinetic build-image --repo docker.io/me/kinetic --update-credentials\n" +
			"  kinetic build-image --repo 127.0.0.1:5000/kinetic --category cpu --dockerfile ./Dockerfile --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b.cmd, b.stderr, b.tty, b.e = cmd, cmd.ErrOrStderr(), isTerminal(cmd.InOrStdin()), nil
			defer func() {
				if b.e != nil {
					b.e.Close()
				}
			}()
			for _, step := range buildImageSteps {
				if err := step(b); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&b.r.Repo, "repo", "", "repository to publish to (REGISTRY/PATH; default: base_image_repo)")
	f.StringSliceVar(&b.categories, "category", nil, "accelerator category: cpu, gpu or tpu (repeatable; default: all three)")
	f.StringVar(&b.r.Tag, "tag", "", "tag (default: this kinetic's version)")
	f.StringVar(&b.r.Base, "base", "", "image to start from (default: base_image_CATEGORY, else python:PYTHON-slim)")
	f.StringVar(&b.r.Python, "python", "", "the Python minor version of the base, e.g. 3.12: jobs from clients on that Python use it (default: that of python3 on PATH)")
	f.StringVar(&b.dockerfile, "dockerfile", "", "build the image to start from with this Dockerfile (podman or docker; its directory is the context)")
	f.BoolVar(&b.creds, "configure-docker", false, "make gcloud the Docker credential helper of the repository's host (Artifact Registry, Container Registry), as gcloud auth configure-docker does")
	f.BoolVar(&b.login, "update-credentials", false, "enter the registry's credentials again (docker or podman login), even if some are stored; no effect for Artifact Registry and Container Registry, which take your Application Default Credentials")
	f.BoolVarP(&b.yes, "yes", "y", false, "do not ask for confirmation")
	f.BoolVar(&b.asJSON, "json", false, "print the results as a JSON list")
	b.where = addGKEFlags(cmd) // as the reference's: the project whose registry is the default
	return cmd
}

func (b *buildImage) checkFlags() (err error) {
	if b.cats, err = buildCategories(b.categories); err != nil {
		return err
	}
	if b.dockerfile != "" && b.r.Base != "" {
		return errors.New("--dockerfile and --base both say what the base starts from: give one")
	}
	return nil
}

func (b *buildImage) openEngine() (err error) {
	b.e, err = newEngine(b.cmd, b.g, keyFlagArgs(b.where.vals))
	return err
}

// repository is --repo, base_image_repo, or asked for on a terminal; and the tag.
func (b *buildImage) repository() (err error) {
	r := &b.r
	if r.Repo == "" {
		r.Repo = b.e.Config().Get(config.BaseImageRepo)
	}
	if r.Repo == "" {
		if !b.tty {
			return errors.New("no repository to publish to: give --repo REGISTRY/PATH (or set base_image_repo: KINETIC_BASE_IMAGE_REPO or `kinetic profile set base_image_repo=...`)")
		}
		if r.Repo, err = newPrompter(b.cmd.InOrStdin(), b.stderr).Ask("repository to publish to (REGISTRY/PATH, e.g. us-docker.pkg.dev/my-project/kinetic)", ""); err != nil {
			return err
		}
	}
	if b.repo, err = image.ParseRepository(r.Repo); err != nil {
		return fmt.Errorf("--repo %s: %w", r.Repo, err)
	}
	b.tag = r.Tag
	if b.tag == "" {
		b.tag = version.Version
	}
	return nil
}

// python is --python, or the Python jobs from this machine's python3 will ask for.
func (b *buildImage) python() error {
	if b.r.Python == "" {
		b.r.Python = image.DefaultPython
		if v, err := pyenv.MinorVersion(b.cmd.Context(), "python3"); err == nil && v != "" {
			b.r.Python = v
		}
	}
	if err := image.CheckPython(b.r.Python); err != nil {
		return fmt.Errorf("--python: %w", err)
	}
	return nil
}

// showPlan prints what will be built and pushed.
func (b *buildImage) showPlan() error {
	fmt.Fprintln(b.stderr, "kinetic build-image will build and push:")
	for _, c := range b.cats {
		t, err := image.BaseTag(b.repo, c, b.tag, b.r.Python)
		if err != nil {
			return fmt.Errorf("--tag %s: %w", b.tag, err)
		}
		from := b.r.Base
		switch {
		case b.dockerfile != "":
			from = "the image " + b.dockerfile + " builds"
		case from == "":
			from = "base_image_" + c
		}
		fmt.Fprintf(b.stderr, "  %s  (from %s)\n", t, from)
	}
	if b.creds {
		fmt.Fprintf(b.stderr, "  and make gcloud the credential helper of %s\n", b.repo.RegistryStr())
	}
	return nil
}

func (b *buildImage) reenter() error {
	if !b.login {
		return nil
	}
	return reenterCredentials(b.cmd, b.repo, b.tty)
}

// confirm asks on a terminal (unless -y).
func (b *buildImage) confirm() error {
	if !b.tty || b.yes {
		return nil
	}
	ok, err := newPrompter(b.cmd.InOrStdin(), b.stderr).Confirm("build and push?")
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("nothing built")
	}
	return nil
}

func (b *buildImage) configureDocker() error {
	if !b.creds {
		return nil
	}
	return updateCredentials(b.cmd, b.repo)
}

// dockerfileBase builds the image to start from with --dockerfile.
func (b *buildImage) dockerfileBase() (err error) {
	if b.dockerfile == "" {
		return nil
	}
	b.r.Base, err = b.e.BaseFromDockerfile(b.cmd.Context(), b.r.Repo, b.r.Tag, b.dockerfile)
	return err
}

// build builds and pushes each category's base; a failed one does not stop the others.
func (b *buildImage) build() error {
	var results []*engine.BuildImageResult
	var failed []string
	for _, c := range b.cats {
		one := b.r
		one.Category = c
		res, err := b.e.BuildImage(b.cmd.Context(), one)
		if err != nil {
			fmt.Fprintf(b.stderr, "kinetic: %s: %v\n", c, err)
			failed = append(failed, c)
			continue
		}
		results = append(results, res)
		if !b.asJSON {
			fmt.Fprintln(b.cmd.OutOrStdout(), res.Image)
		}
	}
	if b.asJSON {
		if err := writeJSON(b.cmd.OutOrStdout(), results); err != nil {
			return err
		}
	}
	return buildFailures(failed, results)
}

// buildFailures says which categories failed, and which were published.
func buildFailures(failed []string, results []*engine.BuildImageResult) error {
	if len(failed) == 0 {
		return nil
	}
	done := "none was published"
	if len(results) > 0 {
		var ok []string
		for _, res := range results {
			ok = append(ok, res.Category)
		}
		done = strings.Join(ok, ", ") + " published"
	}
	return fmt.Errorf("the base of %s could not be built (above); %s", strings.Join(failed, ", "), done)
}

// buildCategories checks the --category values ("" means all), in the catalog's order.
func buildCategories(given []string) ([]string, error) {
	if len(given) == 0 {
		return image.Categories, nil
	}
	want := map[string]bool{}
	for _, c := range given {
		c = strings.ToLower(strings.TrimSpace(c))
		if !slices.Contains(image.Categories, c) {
			return nil, fmt.Errorf("--category %q: use cpu, gpu or tpu (repeat the flag, or separate with commas, for several)", c)
		}
		want[c] = true
	}
	var out []string
	for _, c := range image.Categories {
		if want[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// updateCredentials makes gcloud the credential helper of repo's registry.
func updateCredentials(cmd *cobra.Command, repo name.Repository) error {
	path, err := image.DockerConfigPath()
	if err != nil {
		return err
	}
	host := repo.RegistryStr()
	changed, err := image.UseGcloudCredentials(path, host)
	if err != nil {
		return fmt.Errorf("--configure-docker: %w", err)
	}
	if changed {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: %s now gets its credentials from gcloud (credHelpers in %s)\n", host, path)
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: %s already gets its credentials from gcloud (%s)\n", host, path)
	}
	return nil
}

// reenterCredentials is --update-credentials, the reference's meaning: enter the
// registry's credentials again. Google's registries take Application Default Credentials
// (image.Keychain), so there it changes nothing and says so; elsewhere it runs `docker
// login HOST` (or podman's) on this terminal, whose stored credentials the keychain reads.
func reenterCredentials(cmd *cobra.Command, repo name.Repository, tty bool) error {
	host := repo.RegistryStr()
	if image.GoogleRegistry(host) {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: --update-credentials has no effect for %s: kinetic pushes there with your Application Default Credentials (gcloud auth application-default login)\n", host)
		return nil
	}
	tool := ""
	for _, t := range []string{"docker", "podman"} {
		if _, err := exec.LookPath(t); err == nil {
			tool = t
			break
		}
	}
	switch {
	case !tty:
		return fmt.Errorf("--update-credentials asks for %s's credentials on a terminal, and there is none: run `docker login %s` (or `podman login %s`) yourself, then build-image again", host, host, host)
	case tool == "":
		return fmt.Errorf("--update-credentials runs `docker login %s` or `podman login %s`, and neither is installed: install one, or write the credentials into ~/.docker/config.json", host, host)
	}
	login := exec.CommandContext(cmd.Context(), tool, "login", host)
	login.Stdin, login.Stdout, login.Stderr = cmd.InOrStdin(), rawStderr(cmd), rawStderr(cmd)
	if err := login.Run(); err != nil {
		return fmt.Errorf("--update-credentials: %s login %s did not succeed (%v): nothing was built", tool, host, err)
	}
	return nil
}
