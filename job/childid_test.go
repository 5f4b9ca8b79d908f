package job

import (
	"regexp"
	"testing"
)

func TestChildID(t *testing.T) {
	gid := NewGroupID()
	for _, i := range []int{0, 7, 10, 9999, 1 << 30} {
		id := ChildID(gid, i)
		if !ValidName(id) {
			t.Errorf("ChildID(%s, %d) = %q is not a valid name", gid, i, id)
		}
		g, j, ok := ParseChildID(id)
		if !ok || g != gid || j != i {
			t.Errorf("ParseChildID(%q) = %q, %d, %v", id, g, j, ok)
		}
		if a, ok := CreatedAt(id); !ok || a.IsZero() {
			t.Errorf("CreatedAt(%q) = %v, %v", id, a, ok)
		}
	}
	for _, bad := range []string{NewID(), gid, ChildID(gid, 1) + "x", NewID() + "-01", NewID() + "--1", NewID() + "-", "grp-" + gid[4:] + "-1"} {
		if _, _, ok := ParseChildID(bad); ok {
			t.Errorf("ParseChildID(%q) accepted", bad)
		}
	}
}

// FuzzParseChildID: IDs come from users and from store listings.
func FuzzParseChildID(f *testing.F) {
	gid := NewGroupID()
	f.Add(ChildID(gid, 12))
	f.Add(NewID())
	f.Add("job-0123456789abcdefghijklm-99999999999999999999")
	f.Fuzz(func(t *testing.T, id string) {
		g, i, ok := ParseChildID(id)
		if ok && ChildID(g, i) != id {
			t.Errorf("ParseChildID(%q) = %q, %d: ChildID gives %q", id, g, i, ChildID(g, i))
		}
	})
}

// FuzzValidID holds ValidID to the pattern it was written from.
func FuzzValidID(f *testing.F) {
	idPattern := regexp.MustCompile(`^(job|grp)-[0-9a-v]{23}$`)
	f.Add(NewID())
	f.Add(NewGroupID())
	f.Add("job-0123456789abcdefghijklmv")
	f.Add("job-0123456789abcdefghijklmw")
	f.Add("JOB-0123456789abcdefghijklmv")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidID(s), idPattern.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
