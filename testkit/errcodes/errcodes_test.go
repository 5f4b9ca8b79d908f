package errcodes

import (
	"strings"
	"testing"

	"github.com/kinetic-run/kinetic/testkit/srcroot"
)

// TestErrVarsHaveCodes: every exported Err… variable of the product code is made with
// an errs code (issue 48): a new `var ErrX = errors.New(…)` fails here, naming it.
func TestErrVarsHaveCodes(t *testing.T) {
	found, err := Check(srcroot.MustDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: give it a code where it is made (errs.New(errs.InvalidArgument, …)), see errs' doc", f)
	}
}

// TestCheckFindsAnUncodedErr: the check fails on a sentinel made with errors.New or
// fmt.Errorf, or an alias of the standard library's, and passes coded ones and aliases.
func TestCheckFindsAnUncodedErr(t *testing.T) {
	src := `package p
import ("errors"; "fmt"; "io/fs"; "github.com/kinetic-run/kinetic/errs"; "github.com/kinetic-run/kinetic/jobview")
var ErrPlain = errors.New("plain")
var (
	ErrFmt = fmt.Errorf("fmt")
	ErrStd = fs.ErrExist
	ErrCoded = errs.New(errs.InvalidArgument, "coded")
	ErrAlias = jobview.ErrNotFound
	ErrLocal = ErrCoded
	errUnexported = errors.New("not exported")
)
`
	found, err := CheckFile("p.go", "p", src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "p.ErrPlain p.ErrFmt p.ErrStd" {
		t.Fatalf("findings %q, want p.ErrPlain p.ErrFmt p.ErrStd", got)
	}
}

// TestPlanErrorsHaveCodes: every error engine/plan makes carries a code
// (InvalidArgument or FailedPrecondition for what the caller gave or must change
// first): no errors.New or fmt.Errorf outside errs.Wrap or withCode.
func TestPlanErrorsHaveCodes(t *testing.T) {
	found, err := Uncoded(srcroot.Join("engine", "plan"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: %s makes an error without a code: use errs.New or errs.Errorf with InvalidArgument or FailedPrecondition", f.Pos, f.Name)
	}
}

// TestUncodedFindsAPlainError: the check finds errors.New and fmt.Errorf, and passes
// them inside withCode and errs.Wrap.
func TestUncodedFindsAPlainError(t *testing.T) {
	src := `package p
func f() error { return errors.New("plain") }
func g(err error) error { return fmt.Errorf("wrapped: %w", err) }
func h(err error) error { return withCode(errs.InvalidArgument, fmt.Errorf("x: %w", err)) }
func i(err error) error { return errs.Wrap(errs.NotFound, errors.New("y")) }
`
	found, err := UncodedFile("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].Name != "errors.New" || found[1].Name != "fmt.Errorf" {
		t.Fatalf("findings %v, want errors.New and fmt.Errorf on the first two lines", found)
	}
}
