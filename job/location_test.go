package job

import (
	"strings"
	"testing"
)

type testLoc struct {
	Cluster string `json:"cluster"`
	N       int    `json:"n"`
}

// TestLocation: a backend's location survives handle.json, with its version; a handle
// without one (written before locations) has version 0 and no error; one that does not
// parse is an error naming the job.
func TestLocation(t *testing.T) {
	h := &Handle{JobID: "job-1a2b3c4d", Backend: "x", ClusterName: "flat"}
	if err := h.SetLocation(2, testLoc{Cluster: "c", N: 3}); err != nil {
		t.Fatal(err)
	}
	h2, err := DecodeHandle(h.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var l testLoc
	if v, err := h2.LocationOf(&l); err != nil || v != 2 || l != (testLoc{"c", 3}) {
		t.Errorf("LocationOf = %d %+v %v, want 2 {c 3}", v, l, err)
	}
	old, err := DecodeHandle([]byte(`{"job_id":"job-1a2b3c4d","backend":"gke","project":"p","zone":"z","cluster_name":"c","namespace":"n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := old.LocationOf(&l); v != 0 || err != nil {
		t.Errorf("a handle of the old shape: LocationOf = %d %v, want 0 and no error", v, err)
	}
	for _, bad := range []string{"x", `{"v":0,"data":{}}`, `{"v":1}`, `{"v":1,"data":"not an object"}`} {
		h := &Handle{JobID: "job-1a2b3c4d", Location: bad}
		if _, err := h.LocationOf(&l); err == nil || !strings.Contains(err.Error(), "job-1a2b3c4d") {
			t.Errorf("location %q: %v, want an error naming the job", bad, err)
		}
	}
	if err := h.SetLocation(0, nil); err == nil {
		t.Error("version 0 accepted")
	}
}

func FuzzLocationOf(f *testing.F) {
	f.Add(`{"v":1,"data":{"cluster":"c","n":1}}`)
	f.Add(`{"v":-1,"data":null}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, s string) {
		h := &Handle{JobID: "job-1a2b3c4d", Location: s}
		var l testLoc
		v, err := h.LocationOf(&l)
		if err != nil {
			return
		}
		if s != "" && v < 1 {
			t.Fatalf("location %q read as version %d", s, v)
		}
		if v >= 1 {
			if err := h.SetLocation(v, l); err != nil {
				t.Fatal(err)
			}
			var l2 testLoc
			if v2, err := h.LocationOf(&l2); err != nil || v2 != v || l2 != l {
				t.Fatalf("re-encoded location changed: %d %+v %v", v2, l2, err)
			}
		}
	})
}
