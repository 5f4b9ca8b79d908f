package data

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFuseSpec(t *testing.T) {
	for name, tc := range map[string]struct {
		uri, want, path string
	}{
		"directory":   {"gs://bkt/datasets/imagenet/", `{"volume":{"csi":{"driver":"gcsfuse.csi.storage.gke.io","readOnly":true,"volumeAttributes":{"bucketName":"bkt","mountOptions":"implicit-dirs,only-dir=datasets/imagenet"}},"name":"data-0"},"volumeMount":{"mountPath":"/data","name":"data-0","readOnly":true},"path":"/data"}`, "/data"},
		"bucket root": {"gs://bkt/", `{"volume":{"csi":{"driver":"gcsfuse.csi.storage.gke.io","readOnly":true,"volumeAttributes":{"bucketName":"bkt","mountOptions":"implicit-dirs"}},"name":"data-0"},"volumeMount":{"mountPath":"/data","name":"data-0","readOnly":true},"path":"/data"}`, "/data"},
		"object":      {"gs://bkt/w/weights.h5", `{"volume":{"csi":{"driver":"gcsfuse.csi.storage.gke.io","readOnly":true,"volumeAttributes":{"bucketName":"bkt","mountOptions":"implicit-dirs,only-dir=w"}},"name":"data-0"},"volumeMount":{"mountPath":"/data","name":"data-0","readOnly":true},"path":"/data/weights.h5"}`, "/data/weights.h5"},
	} {
		t.Run(name, func(t *testing.T) {
			ref, err := Parse(tc.uri, true, false)
			if err != nil {
				t.Fatal(err)
			}
			v, err := FuseSpec(ref, "data-0", "/data")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(v)
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			if v.Path != tc.path {
				t.Errorf("path %s, want %s", v.Path, tc.path)
			}
		})
	}
	ref, _ := Parse("gs://bkt/x/", false, false)
	if _, err := FuseSpec(ref, "d", "/d"); err == nil || !strings.Contains(err.Error(), "fuse=True") {
		t.Fatalf("non-fuse Data: %v", err)
	}
}
