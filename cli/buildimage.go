package cli

import (
	"errors"
	"fmt"
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

func newBuildImageCmd(g *Globals) *cobra.Command {
	var (
		r                 engine.BuildImageRequest
		categories        []string
		dockerfile        string
		creds, login, yes bool
		asJSON            bool
		where             *gkeFlags
	)
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
			cats, err := buildCategories(categories)
			if err != nil {
				return err
			}
			if dockerfile != "" && r.Base != "" {
				return errors.New("--dockerfile and --base both say what the base starts from: give one")
			}
			e, err := newEngine(cmd, g, keyFlagArgs(where.vals))
			if err != nil {
				return err
			}
			defer e.Close()
			stderr := cmd.ErrOrStderr()
			tty := isTerminal(cmd.InOrStdin())
			if r.Repo == "" {
				r.Repo = e.Config().Get(config.BaseImageRepo)
			}
			if r.Repo == "" {
				if !tty {
					return errors.New("no repository to publish to: give --repo REGISTRY/PATH (or set base_image_repo: KINETIC_BASE_IMAGE_REPO or `kinetic profile set base_image_repo=...`)")
				}
				if r.Repo, err = newPrompter(cmd.InOrStdin(), stderr).Ask("repository to publish to (REGISTRY/PATH, e.g. us-docker.pkg.dev/my-project/kinetic)", ""); err != nil {
					return err
				}
			}
			repo, err := image.ParseRepository(r.Repo)
			if err != nil {
				return fmt.Errorf("--repo %s: %w", r.Repo, err)
			}
			tag := r.Tag
			if tag == "" {
				tag = version.Version
			}
			if r.Python == "" {
				// The Python jobs from this machine's python3 will ask for.
				r.Python = image.DefaultPython
				if v, err := pyenv.MinorVersion(cmd.Context(), "python3"); err == nil && v != "" {
					r.Python = v
				}
			}
			if err := image.CheckPython(r.Python); err != nil {
				return fmt.Errorf("--python: %w", err)
			}
			fmt.Fprintln(stderr, "kinetic build-image will build and push:")
			for _, c := range cats {
				t, err := image.BaseTag(repo, c, tag, r.Python)
				if err != nil {
					return fmt.Errorf("--tag %s: %w", tag, err)
				}
				from := r.Base
				switch {
				case dockerfile != "":
					from = "the image " + dockerfile + " builds"
				case from == "":
					from = "base_image_" + c
				}
				fmt.Fprintf(stderr, "  %s  (from %s)\n", t, from)
			}
			if creds {
				fmt.Fprintf(stderr, "  and make gcloud the credential helper of %s\n", repo.RegistryStr())
			}
			if login {
				if err := reenterCredentials(cmd, repo, tty); err != nil {
					return err
				}
			}
			if tty && !yes {
				ok, err := newPrompter(cmd.InOrStdin(), stderr).Confirm("build and push?")
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("nothing built")
				}
			}
			if creds {
				if err := updateCredentials(cmd, repo); err != nil {
					return err
				}
			}
			if dockerfile != "" {
				if r.Base, err = e.BaseFromDockerfile(cmd.Context(), r.Repo, r.Tag, dockerfile); err != nil {
					return err
				}
			}
			var results []*engine.BuildImageResult
			var failed []string
			for _, c := range cats {
				one := r
				one.Category = c
				res, err := e.BuildImage(cmd.Context(), one)
				if err != nil {
					fmt.Fprintf(stderr, "kinetic: %s: %v\n", c, err)
					failed = append(failed, c)
					continue
				}
				results = append(results, res)
				if !asJSON {
					fmt.Fprintln(cmd.OutOrStdout(), res.Image)
				}
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), results); err != nil {
					return err
				}
			}
			if len(failed) > 0 {
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
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Repo, "repo", "", "repository to publish to (REGISTRY/PATH; default: base_image_repo)")
	f.StringSliceVar(&categories, "category", nil, "accelerator category: cpu, gpu or tpu (repeatable; default: all three)")
	f.StringVar(&r.Tag, "tag", "", "tag (default: this kinetic's version)")
	f.StringVar(&r.Base, "base", "", "image to start from (default: base_image_CATEGORY, else python:PYTHON-slim)")
	f.StringVar(&r.Python, "python", "", "the Python minor version of the base, e.g. 3.12: jobs from clients on that Python use it (default: that of python3 on PATH)")
	f.StringVar(&dockerfile, "dockerfile", "", "build the image to start from with this Dockerfile (podman or docker; its directory is the context)")
	f.BoolVar(&creds, "configure-docker", false, "make gcloud the Docker credential helper of the repository's host (Artifact Registry, Container Registry), as gcloud auth configure-docker does")
	f.BoolVar(&login, "update-credentials", false, "enter the registry's credentials again (docker or podman login), even if some are stored; no effect for Artifact Registry and Container Registry, which take your Application Default Credentials")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	f.BoolVar(&asJSON, "json", false, "print the results as a JSON list")
	where = addGKEFlags(cmd) // as the reference's: the project whose registry is the default
	return cmd
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
	login.Stdin, login.Stdout, login.Stderr = cmd.InOrStdin(), cmd.ErrOrStderr(), cmd.ErrOrStderr()
	if err := login.Run(); err != nil {
		return fmt.Errorf("--update-credentials: %s login %s did not succeed (%v): nothing was built", tool, host, err)
	}
	return nil
}
