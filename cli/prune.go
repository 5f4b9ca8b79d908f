package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/pack"
)

func newPruneCmd(g *Globals) *cobra.Command {
	var olderThan, store string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune [--older-than 7d] [--dry-run]",
		Short: "Remove what no job needs any more: local workspaces, unused environments, old tombstones, empty output directories",
		Long: `Removes, on this machine and in the store, what no job needs any more, and says
how much it freed:

  - workspaces of local jobs that ended (or were cleaned up) longer ago than --older-than;
  - local Python environments no kept job uses and no job used for --older-than;
  - tombstones of results collected longer ago than --older-than;
  - empty output directories of ended jobs (a file:// store);
  - content blobs (working directories, payloads) and uploaded Data that no job in the
    store uses (by its spec or its batch's template), once older than
    --older-than and at least an hour (a job being submitted uploads them first).

Never a job that has not ended, never what a job still in the store uses (running, or
ended and not cleaned up), and never an output directory with anything in it. A job's
content goes once the job is cleaned up or its result collected. --dry-run removes
nothing; without it, prune removes.`,
		Example: `  kinetic prune --dry-run
  kinetic prune --older-than 1d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			age, err := parseAge(olderThan)
			if err != nil {
				return usageErrorf("--older-than %q: %w", olderThan, err)
			}
			e, err := newEngine(cmd, g, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			freed, err := e.Prune(cmd.Context(), store, backend.PruneOptions{OlderThan: age, DryRun: dryRun})
			if err != nil && len(freed) == 0 {
				return err // nothing was pruned: the error alone, not "nothing to prune" before it
			}
			if asJSON {
				if jerr := writeJSON(cmd.OutOrStdout(), map[string]any{"dry_run": dryRun, "freed": nonNil(freed), "bytes": total(freed)}); jerr != nil {
					return jerr
				}
			} else {
				printFreed(cmd.OutOrStdout(), freed, dryRun)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "7d", "keep what was used or ended more recently than this (e.g. 12h, 7d)")
	f.BoolVar(&dryRun, "dry-run", false, "say what would be removed, and remove nothing")
	f.BoolVar(&asJSON, "json", false, "print what was removed as JSON")
	f.StringVar(&store, "store", "", "store URL (default: the configured store)")
	return cmd
}

func nonNil(f []backend.Freed) []backend.Freed {
	if f == nil {
		return []backend.Freed{}
	}
	return f
}

func total(f []backend.Freed) int64 {
	var n int64
	for _, x := range f {
		n += x.Bytes
	}
	return n
}

// printFreed is a line per kind (how many, how much) and the total.
func printFreed(w io.Writer, freed []backend.Freed, dryRun bool) {
	verb := "freed"
	if dryRun {
		verb = "would free"
	}
	if len(freed) == 0 {
		fmt.Fprintln(w, "nothing to prune")
		return
	}
	count, size := map[string]int{}, map[string]int64{}
	for _, f := range freed {
		count[f.Kind]++
		size[f.Kind] += f.Bytes
	}
	kinds := make([]string, 0, len(count))
	for k := range count {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, k := range kinds {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", count[k], plural(k, count[k]), pack.HumanBytes(size[k]))
	}
	tw.Flush()
	fmt.Fprintf(w, "%s %s in all\n", verb, pack.HumanBytes(total(freed)))
}

func plural(kind string, n int) string {
	if n == 1 {
		return kind
	}
	if kind == "output directory" {
		return "output directories"
	}
	if kind == "data" {
		return "uploaded Data"
	}
	return kind + "s"
}
