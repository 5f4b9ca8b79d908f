package job

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// IDs are "job-" (or "grp-") + 10 characters of creation time in milliseconds + 13
// characters of randomness, all in lowercase base32hex. base32hex preserves the sort
// order of the bytes it encodes, so IDs sort by creation time; 64 random bits make a
// collision among 10^8 IDs created in the same millisecond about 3·10^-4, and across
// different milliseconds impossible. The result (27 characters) is a valid Kubernetes
// name (DNS-1123 label) and leaves room for suffixes such as "-r1".
const (
	JobPrefix   = "job-"
	GroupPrefix = "grp-"
	alphabet    = "0123456789abcdefghijklmnopqrstuv"
	timeChars   = 10 // 50 bits of milliseconds: good until the year 37648
	randChars   = 13 // 65 bits, of which 64 are random
)

// NewID returns a fresh job ID.
func NewID() string { return newID(JobPrefix, time.Now()) }

// NewGroupID returns a fresh batch group ID.
func NewGroupID() string { return newID(GroupPrefix, time.Now()) }

func newID(prefix string, t time.Time) string {
	var b strings.Builder
	b.Grow(len(prefix) + timeChars + randChars)
	b.WriteString(prefix)
	ms := uint64(t.UnixMilli())
	for i := timeChars - 1; i >= 0; i-- {
		b.WriteByte(alphabet[(ms>>(5*uint(i)))&31])
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(fmt.Sprintf("job: no randomness: %v", err)) // crypto/rand never fails on Linux
	}
	v := binary.BigEndian.Uint64(r[:])
	// 13 characters carry 65 bits; the top character holds the top 4 random bits.
	for i := randChars - 1; i >= 0; i-- {
		shift := 5 * uint(i)
		if shift >= 64 {
			b.WriteByte(alphabet[0])
			continue
		}
		b.WriteByte(alphabet[(v>>shift)&31])
	}
	return b.String()
}

// ValidID reports whether s is a well-formed job or group ID. IDs from other tools
// (for example the reference's "job-1a2b3c4d") are accepted by ValidName instead.
func ValidID(s string) bool {
	// ^(job|grp)-[0-9a-v]{23}$ by hand (FuzzValidID holds it to the regexp): every status read parses an ID (ParseChildID), and the regexp
	// was a visible part of a local map's engine time.
	if len(s) != 4+timeChars+randChars || s[3] != '-' || s[:3] != "job" && s[:3] != "grp" {
		return false
	}
	for k := 4; k < len(s); k++ {
		if c := s[k]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'v') {
			return false
		}
	}
	return true
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidName reports whether s can name a job in the store and on Kubernetes: a DNS-1123
// label. Every lookup by ID checks this first, so a user-typed ID can never escape the
// job's prefix in the store.
func ValidName(s string) bool { return len(s) <= 63 && namePattern.MatchString(s) }

// ChildID is the job of the first attempt of input i of batch gid when its children
// are derived rather than written at submission (a batch run as one unit on a cluster:
// docs/store.md): "job-" + the group ID's 23 characters + "-" + i. It sorts and dates like
// its batch, and is a valid Kubernetes name for any index below 10^31.
func ChildID(gid string, i int) string {
	return JobPrefix + gid[len(GroupPrefix):] + "-" + strconv.Itoa(i)
}

// ParseChildID splits an ID made by ChildID into its batch and index.
func ParseChildID(id string) (gid string, i int, ok bool) {
	const n = len(JobPrefix) + timeChars + randChars
	if len(id) < n+2 || id[n] != '-' || !ValidID(id[:n]) || id[:len(JobPrefix)] != JobPrefix {
		return "", 0, false
	}
	digits := id[n+1:]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, false // one spelling per index
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 0 || strconv.Itoa(i) != digits {
		return "", 0, false
	}
	return GroupPrefix + id[len(JobPrefix):n], i, true
}

// CreatedAt decodes the creation time embedded in an ID made by NewID (or ChildID).
func CreatedAt(id string) (time.Time, bool) {
	if gid, _, ok := ParseChildID(id); ok {
		id = gid
	}
	if !ValidID(id) {
		return time.Time{}, false
	}
	var ms uint64
	for _, c := range id[4 : 4+timeChars] {
		ms = ms<<5 | uint64(strings.IndexRune(alphabet, c))
	}
	return time.UnixMilli(int64(ms)).UTC(), true
}
