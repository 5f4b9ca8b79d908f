package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinetic-run/kinetic/errs"
)

// secondsValue is a duration flag that also takes a plain number of seconds, as the
// reference's CLI does (`--timeout 60`), besides Go's and a person's forms (90s, 10m,
// 1h30m, 2d). 0 means no limit.
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (v secondsValue) Type() string { return "seconds" }

func (v secondsValue) Set(s string) error {
	d, err := parseSeconds(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// maxFlagDuration bounds every duration flag: far beyond any job, well inside
// time.Duration's ~292 years, so nothing wraps around.
const maxFlagDuration = 100 * 365 * 24 * time.Hour

// parseSeconds reads "60", "1.5", "90s", "10m", "1h30m" or "2d"; 0 is allowed.
func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f < 0 {
			return 0, errors.New("give a number of seconds (0 or more) or a duration like 30s, 10m or 2h")
		}
		if math.IsInf(f, 1) || f*float64(time.Second) > float64(maxFlagDuration) {
			return 0, errors.New("at most 100 years")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	if s == "0" {
		return 0, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("a negative duration: give 0 or more, like 30s, 10m or 2h (without the minus)")
	}
	return parseAge(s)
}

// durationFlag adds a seconds-or-duration flag.
func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(secondsValue{p}, name, usage)
}

// flagError turns pflag's parse errors into the flag's name and what to write instead,
// without Go's own text (`strconv.ParseInt: parsing "…": value out of range`), and with
// the offending value cut to a readable length.
func flagError(cmd *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return usageError(unknownFlagError(cmd, err))
	}
	fl := iv.GetFlag()
	name := "--" + fl.Name
	if fl.Shorthand != "" {
		name = "-" + fl.Shorthand + "/--" + fl.Name
	}
	var want string
	switch fl.Value.Type() {
	case "int", "int64", "int32":
		want = fmt.Sprintf("give a whole number up to %d", math.MaxInt32)
	case "uint", "uint64", "uint32":
		want = fmt.Sprintf("give a whole number from 0 up to %d", math.MaxInt32)
	case "float64", "float32":
		want = "give a number"
	case "bool":
		want = "give true or false"
	case "duration":
		want = "give a duration like 30s, 10m or 2h"
	default:
		// Our own Value types already say what was wrong in the user's terms.
		var ne *strconv.NumError
		if c := iv.Unwrap(); c != nil && !errors.As(c, &ne) {
			want = c.Error()
		} else {
			want = "see --help for the values it takes"
		}
	}
	return usageErrorf("%s %s: %s", name, errs.Quote(iv.GetValue()), want)
}
