package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
)

func newInitCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init [-y --backend k8s|gke|local ...]",
		Short: "Set kinetic up on this machine: join a Kubernetes cluster, create one on GKE, or stay local",
		Long: "On a terminal, init shows what is already here (kubeconfig contexts, the Google\n" +
			"Cloud project and credentials, existing profiles) and asks where jobs should run:\n" +
			"join a Kubernetes context (it runs `kinetic up --backend k8s`), create a GKE\n" +
			"cluster (it runs `kinetic up --backend gke`), or stay local. It writes a profile\n" +
			"(--profile NAME, default `default`) and makes it active. Without a terminal, give\n" +
			"-y and the flags of the choice.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInit(cmd, g)
		},
	}
	f := cmd.Flags()
	f.String("backend", "", "where jobs run: "+strings.Join(initBackends(), ", "))
	f.String("profile-name", "", "the profile to write and make active (default: the cluster's name on GKE, else default)")
	f.BoolP("yes", "y", false, "do not ask: take the flags (and defaults) as the answers")
	provision.DefineFlags(provision.CmdInit, f)
	return cmd
}

// initBackends are the backends init offers (those registered with an InitUsage).
func initBackends() []string {
	var bs []string
	for _, u := range provision.InitUsages() {
		if _, after, ok := strings.Cut(u, "--backend "); ok {
			bs = append(bs, strings.Fields(after)[0])
		}
	}
	return bs
}

// initUsageFix says how to run init without a terminal.
func initUsageFix() string {
	us := provision.InitUsages()
	for i := range us {
		us[i] = "`" + us[i] + "`"
	}
	if n := len(us); n > 1 {
		us[n-1] = "or " + us[n-1]
	}
	return "run it on a terminal, or give -y and flags: " + strings.Join(us, ", ")
}

// runInit asks where jobs should run (unless --backend says) and hands the rest to that
// backend's provisioner.
func runInit(cmd *cobra.Command, g *Globals) error {
	yes, _ := cmd.Flags().GetBool("yes")
	if !isTerminal(cmd.InOrStdin()) && !yes {
		return errors.New("kinetic init asks questions and there is no terminal to ask on: " + initUsageFix())
	}
	be, _ := cmd.Flags().GetString("backend")
	c := newCall(cmd, g, be, nil)
	var choices []provision.Choice
	if !yes {
		c.Prompter = newPrompter(c.In, c.Err)
		var err error
		if choices, err = printSurvey(cmd, c); err != nil {
			return err
		}
	}
	if c.Backend == "" {
		if yes {
			return errors.New("kinetic init -y needs --backend " + strings.Join(initBackends(), ", ") + ": " + initUsageFix())
		}
		if err := chooseBackend(c, choices); err != nil {
			return err
		}
	}
	if err := provision.NotFor(c.Flags, c.Backend); err != nil {
		return err
	}
	p, err := lookupProvisioner(c.Backend)
	if err != nil {
		return err
	}
	return p.Init(cmd.Context(), c)
}

// printSurvey prints what the provisioners found on this machine and the profiles, and
// returns their answers to "Where should jobs run?".
func printSurvey(cmd *cobra.Command, c *provision.Call) ([]provision.Choice, error) {
	path := config.ProfilesPath(nil)
	profiles, err := config.LoadProfiles(path)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(c.Err, "Found on this machine:")
	var choices []provision.Choice
	for _, p := range provision.All() {
		lines, cs := p.Survey(cmd.Context(), c)
		for _, l := range lines {
			fmt.Fprintln(c.Err, l)
		}
		choices = append(choices, cs...)
	}
	printProfiles(c.Err, profiles, path)
	return choices, nil
}

// chooseBackend asks where jobs should run and sets the answer's backend and flags.
func chooseBackend(c *provision.Call, choices []provision.Choice) error {
	labels := make([]string, len(choices))
	for i, ch := range choices {
		labels[i] = ch.Label
	}
	i, err := c.Prompter.Choose("Where should jobs run?", labels, 0)
	if err != nil {
		return err
	}
	c.Backend = choices[i].Backend
	for k, v := range choices[i].Set {
		if !c.Flags.Changed(k) {
			if err := c.Flags.Set(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func printProfiles(w io.Writer, profiles *config.File, path string) {
	names := profiles.Names()
	if len(names) == 0 {
		fmt.Fprintf(w, "  Profiles: none yet (%s)\n", path)
		return
	}
	var ls []string
	for _, n := range names {
		if n == profiles.Current {
			n += " (active)"
		}
		ls = append(ls, n)
	}
	fmt.Fprintf(w, "  Profiles: %s in %s\n", strings.Join(ls, ", "), path)
}
