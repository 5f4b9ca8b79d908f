// Package gcpkey words what is wrong with a Google credentials file (the one
// GOOGLE_APPLICATION_CREDENTIALS names) for every place that reaches Google: the GKE
// connection, the GKE APIs, the gs:// store.
package gcpkey

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Problem says in a person's words why the credentials file at path (the one
// GOOGLE_APPLICATION_CREDENTIALS names) cannot be used, for messages that would
// otherwise quote Google's library ("invalid character 'n' looking for beginning of
// object key string").
func Problem(path string) string {
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be read by this user"
	case err != nil:
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return "is a directory, not a key file"
		}
		return "cannot be read"
	}
	var f map[string]any
	if json.Unmarshal(raw, &f) != nil {
		return "is not a JSON object (a key file is the JSON of a service account's key, or what `gcloud auth application-default login` writes)"
	}
	typ, _ := f["type"].(string)
	switch typ {
	case "":
		return `has no "type" naming a kind of Google credentials`
	case "service_account", "authorized_user", "external_account", "impersonated_service_account", "external_account_authorized_user":
		return fmt.Sprintf("is a %s file that Google's library could not use (a field missing or wrong)", typ)
	}
	return fmt.Sprintf("has type %q, which is not a kind of Google credentials", typ)
}

// Error is an error whose message is msg and that is sentinel (errors.Is) and, when
// given, cause: a caller's "no credentials" error for an unusable key file, said with
// Problem, with Google's own error kept in the chain rather than in the message.
func Error(sentinel error, msg string, cause error) error {
	return &keyFileError{msg: msg, errs: []error{sentinel, cause}}
}

type keyFileError struct {
	msg  string
	errs []error
}

func (e *keyFileError) Error() string   { return e.msg }
func (e *keyFileError) Unwrap() []error { return e.errs }
