package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/engine"
)

func init() { register(newBuildImageCmd) }

func newBuildImageCmd(g *Globals) *cobra.Command {
	var r engine.BuildImageRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build-image --repo REPO --category cpu|gpu|tpu [--tag TAG]",
		Short: "Publish a prebuilt base image (for container_image=\"prebuilt\")",
		Long: `Build REPO/base-CATEGORY:TAG (TAG defaults to this kinetic's version) from the
category's base image (base_image_cpu/gpu/tpu, or --base) plus the kinetic runner, and
push it. No Docker daemon and no cloud builder are needed (image_builder picks another).
Jobs use it with container_image="prebuilt" and base_image_repo=REPO
(KINETIC_BASE_IMAGE_REPO); their requirements are installed when they start.`,
		Example: "  kinetic build-image --repo us-docker.pkg.dev/my-project/kinetic --category gpu\n  kinetic build-image --repo 127.0.0.1:5000/kinetic --category cpu --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := newEngine(cmd, g, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			res, err := e.BuildImage(cmd.Context(), r)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Image)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Repo, "repo", "", "repository to publish to (REGISTRY/PATH)")
	f.StringVar(&r.Category, "category", "", "accelerator category: cpu, gpu or tpu")
	f.StringVar(&r.Tag, "tag", "", "tag (default: this kinetic's version)")
	f.StringVar(&r.Base, "base", "", "image to start from (default: base_image_CATEGORY)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.MarkFlagRequired("repo")
	cmd.MarkFlagRequired("category")
	return cmd
}
