package gkeconn

// keyFileError is ErrNoCredentials for an unusable key file: the message in a person's
// words, Google's error in the chain.
type keyFileError struct {
	msg   string
	cause error
}

func (e *keyFileError) Error() string   { return e.msg }
func (e *keyFileError) Unwrap() []error { return []error{ErrNoCredentials, e.cause} }
