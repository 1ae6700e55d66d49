// Package strictjson decodes JSON from outside callers by one rule for
// every door: valid UTF-8, one JSON value, no field the target does not
// know, nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// ErrInvalidUTF8 is returned for input that is not valid UTF-8.
// encoding/json would quietly turn it into U+FFFD.
var ErrInvalidUTF8 = errors.New("not valid UTF-8")

// Unmarshal decodes b into v like json.Unmarshal, but refuses invalid
// UTF-8 (ErrInvalidUTF8), fields v has no place for, and anything but
// white space after the value. Any error but ErrInvalidUTF8 says what is
// wrong with the JSON in words a caller can act on.
func Unmarshal(b []byte, v any) error {
	if !utf8.Valid(b) {
		return ErrInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("no JSON value")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
