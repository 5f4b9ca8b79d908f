package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/config"
)

func newConfigCmd(g *Globals) *cobra.Command {
	show := newConfigShowCmd(g)
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the resolved configuration (bare: the same as config show)",
		Args:  cobra.NoArgs,
		// Bare `kinetic config` is `kinetic config show`, flags included.
		RunE: func(cmd *cobra.Command, args []string) error { return show.RunE(cmd, args) },
	}
	cmd.Flags().AddFlagSet(show.Flags())
	cmd.AddCommand(show)
	return cmd
}

func newConfigShowCmd(g *Globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show every setting, its value and where it came from",
		Long: "Show every setting, its value and where it came from.\n\n" +
			"Each value comes from the first of: a flag, the KINETIC_<KEY> environment variable,\n" +
			"the active profile, or the default. Flags given here show their effect.",
		Args: cobra.NoArgs,
	}
	args := keyFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		r, err := config.Resolve(config.Options{Args: keyFlagArgs(args), Profile: g.Profile})
		if err != nil {
			return err
		}
		if asJSON {
			return configJSON(cmd.OutOrStdout(), struct {
				Profile       string         `json:"profile"`
				ProfileSource string         `json:"profile_source"`
				ProfilesFile  string         `json:"profiles_file"`
				Values        []config.Entry `json:"values"`
			}{r.ProfileName(), r.ProfileSource(), r.ProfilesFile(), r.Entries()})
		}
		if r.ProfileName() != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "profile %s (from %s)\n", r.ProfileName(), r.ProfileSource())
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "no active profile (profiles file %s)\n", r.ProfilesFile())
		}
		return configTable(cmd.OutOrStdout(), []string{"KEY", "VALUE", "SOURCE"}, configRows(r.Entries(), true))
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// keyFlagName is the flag of a key: output_dir → --output-dir.
func keyFlagName(k config.Key) string { return strings.ReplaceAll(string(k), "_", "-") }

// keyFlags adds one string flag per configuration key, so a new key in package config
// gets its flag everywhere without touching the CLI. A command that has a flag of the
// same name already (run's --python, the job's interpreter) keeps its own: call keyFlags
// after defining the command's flags.
func keyFlags(cmd *cobra.Command) map[config.Key]*string {
	vals := map[config.Key]*string{}
	for _, k := range config.Keys() {
		if cmd.Flags().Lookup(keyFlagName(k)) != nil {
			continue
		}
		v := new(string)
		f := settingFlag{k, v, boolKey(k)}
		fl := cmd.Flags().VarPF(f, keyFlagName(k), "", k.Help()+" (env "+k.EnvVar()+")")
		fl.Annotations = map[string][]string{settingAnnotation: {string(k)}}
		if f.isBool {
			fl.NoOptDefVal = "true"
		}
		fl.Hidden = testOnlyKeys[k]
		vals[k] = v
	}
	cmd.SetUsageFunc(groupedUsage)
	return vals
}

// settingFlag is the flag of a configuration key. Its value is checked as the flag is
// parsed, so a bad one is an error that names the flag (cobra says `invalid argument
// "-1" for "--warm-pods" flag: …`), not the key it sets.
type settingFlag struct {
	k      config.Key
	v      *string
	isBool bool
}

func (f settingFlag) String() string { return *f.v }
func (f settingFlag) Type() string {
	if f.isBool {
		return "bool"
	}
	return "string"
}

func (f settingFlag) Set(s string) error {
	if _, err := config.Validate(f.k, s); err != nil {
		var ve *config.ValueError
		if errors.As(err, &ve) {
			return errors.New(ve.Reason)
		}
		return err
	}
	*f.v = s
	return nil
}

// keyFlagArgs keeps the flags that were given.
func keyFlagArgs(vals map[config.Key]*string) map[config.Key]string {
	out := map[config.Key]string{}
	for k, v := range vals {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}

func configRows(es []config.Entry, withSource bool) [][]string {
	var rows [][]string
	for _, e := range es {
		v := e.Value
		if v == "" {
			v = "-"
		}
		row := []string{string(e.Key), v}
		if withSource {
			row = append(row, e.Source)
		}
		rows = append(rows, row)
	}
	return rows
}

func configTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func configJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
