// Package diskerr marks the errors that are failed writes to the data
// directory, for storage that sits outside the session hub (the attachment
// store): the doors answer them as the hub's own storage faults, 507
// storage_full or 503 storage_error (internal/httpjson classifies them with
// hub.StorageCode, the one classification). A leaf: it imports nothing of
// ours, so storage packages that may import at most event can use it.
package diskerr

// WriteError is a write that did not happen: Op names it ("store
// attachment"), Err is the file system's error.
type WriteError struct {
	Op  string
	Err error
}

func (e *WriteError) Error() string { return e.Op + ": " + e.Err.Error() }

func (e *WriteError) Unwrap() error { return e.Err }

// Wrap returns err as a *WriteError for op; nil stays nil.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &WriteError{Op: op, Err: err}
}
