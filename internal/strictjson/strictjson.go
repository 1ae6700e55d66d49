// Package strictjson decodes JSON from outside callers by one rule for
// every door: valid UTF-8, one JSON value, no field the target does not
// know, no key twice in an object (nor two keys that differ only in case),
// nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidUTF8 is returned for input that is not valid UTF-8.
// encoding/json would quietly turn it into U+FFFD.
var ErrInvalidUTF8 = errors.New("not valid UTF-8")

// DuplicateKeyError is an object that names a key twice, or two keys that
// encoding/json takes for the same field because they differ only in case
// ("content" and "Content"): it would keep the last one silently, so what
// a sender meant is unclear and the input is refused.
type DuplicateKeyError struct {
	First, Second string // the two spellings, in order; equal for a plain repeat
}

func (e *DuplicateKeyError) Error() string {
	if e.First == e.Second {
		return fmt.Sprintf("key %q appears twice in one object; send each key once", e.Second)
	}
	return fmt.Sprintf("keys %q and %q differ only in case and would name the same field; send it once, as %q or as documented",
		e.First, e.Second, e.First)
}

// Unmarshal decodes b into v like json.Unmarshal, but refuses invalid
// UTF-8 (ErrInvalidUTF8), fields v has no place for, a key repeated in an
// object at any depth (or case-variants of one: a *DuplicateKeyError),
// and anything but white space after the value. Any error but
// ErrInvalidUTF8 says what is wrong with the JSON in words a caller can
// act on. v may be changed even when an error is returned.
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
	return CheckKeys(b)
}

// CheckKeys walks the JSON value in b and returns a *DuplicateKeyError for
// the first object that repeats a key, compared the way encoding/json
// matches keys to fields (case-insensitively, with Unicode simple
// folding). Syntax errors are returned as they are; Unmarshal calls it
// only on a value that has already decoded.
func CheckKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers are skipped, not parsed
	return checkValue(dec)
}

// checkValue reads one value from dec and checks its objects' keys.
func checkValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]string{} // folded → as sent
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			f := fold(key)
			if first, ok := seen[f]; ok {
				return &DuplicateKeyError{First: first, Second: key}
			}
			seen[f] = key
			if err := checkValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

// fold maps the keys encoding/json would match to one field to one
// string: ASCII letters upper-cased, other runes to the smallest of their
// simple fold set (the Kelvin sign K and "k" alike, as in its fold.go).
func fold(s string) string {
	var b []byte
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b = append(b, byte(r))
			continue
		}
		b = utf8.AppendRune(b, foldRune(r))
	}
	return string(b)
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
