package job

import (
	"bytes"
	"strconv"
)

// DataKind says what a DataRef points at.
type DataKind string

// The kinds of data.
const (
	DataLocalFile DataKind = "local-file"
	DataLocalDir  DataKind = "local-dir"
	DataGSDir     DataKind = "gs-dir"
	DataGSObject  DataKind = "gs-object"
	DataHF        DataKind = "hf"
)

// IsLocal reports whether k is data on the submitting machine (uploaded by data.Upload).
func (k DataKind) IsLocal() bool { return k == DataLocalFile || k == DataLocalDir }

// DataRef is one Data(...) reference as the spec carries it. Package data makes
// (data.Parse), checks (data.Validate), uploads and materialises them; data.Ref is this
// type.
type DataRef struct {
	// Kind is one of the DataKind constants.
	Kind DataKind `json:"kind"`
	// Source is what the user wrote (a path or URI); it is for messages only.
	Source string `json:"source"`
	// Path is the absolute local path on the submitting machine (local kinds).
	Path string `json:"path,omitempty"`
	// Hash is the hex content hash (local kinds; set by data.Upload, or by the caller
	// from data.ContentHash).
	Hash string `json:"hash,omitempty"`
	// Prefix is the store prefix holding the uploaded data, data/sha256/<hash>/ (local
	// kinds; set by data.Upload).
	Prefix string `json:"prefix,omitempty"`
	// URI is the canonical gs:// or hf:// URI (remote kinds).
	URI string `json:"uri,omitempty"`
	// Fuse asks for a lazy GCS FUSE mount instead of a download.
	Fuse bool `json:"fuse,omitempty"`
	// HFTrustRemoteCode lets datasets.load_dataset run the dataset repository's code.
	HFTrustRemoteCode bool `json:"hf_trust_remote_code,omitempty"`
	// Mount is "" for data passed as an argument, or the absolute path it is mounted at
	// (volumes={"/data": Data(...)}).
	Mount string `json:"mount,omitempty"`
	// Slot is the number of the Data in the call's arguments (Sentinel) when it is not
	// the ref's position in the spec: a batch child carries only the Data of its own
	// input (DataFor), numbered as in the batch.
	Slot *int `json:"slot,omitempty"`
}

// Sentinel is the text the SDK puts in a call's arguments where Data number i was; the
// runner replaces it with the data's path.
func Sentinel(i int) string { return "\x00kinetic-data:" + strconv.Itoa(i) + "\x00" }

// SlotAt is the number of the ref at position i of a spec's Data.
func (r *DataRef) SlotAt(i int) int {
	if r.Slot != nil {
		return *r.Slot
	}
	return i
}

// DataFor returns the Data of refs (a batch's, numbered by position) that one input
// needs: every volume, and each Data whose sentinel its pickled arguments hold (a
// pickled str keeps its bytes as they are), each keeping its number. A batch of many
// inputs with a Data each thus gives every child one ref, not all of them.
func DataFor(refs []DataRef, args []byte) []DataRef {
	var out []DataRef
	for i, r := range refs {
		if r.Mount == "" && !bytes.Contains(args, []byte(Sentinel(r.SlotAt(i)))) {
			continue
		}
		slot := r.SlotAt(i)
		r.Slot = &slot
		out = append(out, r)
	}
	return out
}
