package deps

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// KeyVersion is the first line of the bytes EnvKey hashes; it changes whenever the
// format does, so keys of different formats never collide.
const KeyVersion = "kinetic-env-key/v1"

// EnvKey returns the environment key: the hex SHA-256 of
//
//	kinetic-env-key/v1\n
//	base-image <len>:<baseImage>\n
//	category <len>:<category>\n
//	runner <len>:<runnerVersion>\n
//	line <len>:<line>\n          one per reqs.Lines(), in order
//	constraint <len>:<line>\n    one per reqs.ConstraintLines(), in order
//
// where <len> is the decimal byte length of the value that follows the colon. reqs
// should be the filtered list (Filtered); nil means no requirements. The lines are
// canonical, so comments, blank lines, continuation lines, whitespace, name spelling
// (Foo_Bar vs foo-bar) and the order of extras or of specifier clauses do not change the
// key; any change of a name, version, extra, marker, URL, hash or directive does, as does
// the order of lines. The values are hashed as given: callers pass a canonical base
// image reference and category.
func EnvKey(reqs *Requirements, baseImage, category, runnerVersion string) string {
	h := sha256.New()
	writeKey(h, reqs, baseImage, category, runnerVersion)
	return hex.EncodeToString(h.Sum(nil))
}

func writeKey(w io.Writer, reqs *Requirements, baseImage, category, runnerVersion string) {
	field := func(tag, v string) { fmt.Fprintf(w, "%s %d:%s\n", tag, len(v), v) }
	fmt.Fprintf(w, "%s\n", KeyVersion)
	field("base-image", baseImage)
	field("category", category)
	field("runner", runnerVersion)
	for _, l := range reqs.Lines() {
		field("line", l)
	}
	for _, l := range reqs.ConstraintLines() {
		field("constraint", l)
	}
}
