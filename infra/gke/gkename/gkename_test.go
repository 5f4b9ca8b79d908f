package gkename

import (
	"regexp"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Bucket("p", "c"), "p-kn-c-jobs"},
		{Bucket("p", ""), "p-kn-kinetic-cluster-jobs"},
		{Store("p", "c"), "gs://p-kn-c-jobs"},
		{Repository("c"), "kn-c"},
		{Registry("p", "europe-west4-b", "c"), "europe-west4-docker.pkg.dev/p/kn-c"},
		{Registry("p", "global", "c"), ""},
		{AccountID("kinetic-cluster"), "kn-kinetic-cluster-jobs"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// Google's service account ids: 6 to 30 of [a-z0-9-], a letter first, no dash last.
var accountID = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)

func TestAccountIDLongCluster(t *testing.T) {
	long1 := "a-very-long-cluster-name-for-research-1"
	long2 := "a-very-long-cluster-name-for-research-2"
	a, b := AccountID(long1), AccountID(long2)
	if !accountID.MatchString(a) || !accountID.MatchString(b) || a == b || !strings.HasPrefix(a, "kn-a-very") {
		t.Errorf("AccountID(%q) = %q, AccountID(%q) = %q", long1, a, long2, b)
	}
}

func FuzzAccountID(f *testing.F) {
	f.Add("kinetic-cluster")
	f.Add("a-very-long-cluster-name-for-research-1")
	f.Fuzz(func(t *testing.T, cluster string) {
		// GKE cluster names: a letter, then up to 39 of [a-z0-9-], no dash last.
		if !regexp.MustCompile(`^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$`).MatchString(cluster) {
			t.Skip()
		}
		if id := AccountID(cluster); !accountID.MatchString(id) {
			t.Errorf("AccountID(%q) = %q: not a valid service account id", cluster, id)
		}
	})
}
