package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestUnmarshal(t *testing.T) {
	type msg struct {
		Content string `json:"content"`
	}
	tests := []struct {
		name, in string
		wantErr  bool
		want     string
	}{
		{"object", `{"content":"hi"}`, false, "hi"},
		{"white space around", " \n{\"content\":\"hi\"}\r\n\t ", false, "hi"},
		{"unknown field", `{"content":"hi","colour":"red"}`, true, ""},
		{"second object", `{"content":"hi"}{"content":"again"}`, true, ""},
		{"trailing garbage", `{"content":"hi"} x`, true, ""},
		{"trailing number", `{"content":"hi"} 1`, true, ""},
		{"empty", ``, true, ""},
		{"only space", `  `, true, ""},
		{"truncated", `{"content":`, true, ""},
		{"not an object", `[1,2]`, true, ""},
		{"key twice", `{"content":"a","content":"b"}`, true, ""},
		{"key in another case", `{"content":"a","Content":"b"}`, true, ""},
		{"key in upper case twice", `{"CONTENT":"a","content":"b"}`, true, ""},
		{"Kelvin sign for k", "{\"k\":1,\"\u212a\":2}", true, ""},
		{"escaped spelling of the same key", `{"content":"a","\u0063ontent":"b"}`, true, ""},
		{"one key, case kept", `{"Content":"hi"}`, false, "hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m msg
			err := Unmarshal([]byte(tc.in), &m)
			if (err != nil) != tc.wantErr || (err == nil && m.Content != tc.want) {
				t.Fatalf("Unmarshal(%q) = %+v, %v; want %q, error %v", tc.in, m, err, tc.want, tc.wantErr)
			}
			if err != nil && err.Error() == "" {
				t.Fatal("an error without words")
			}
		})
	}
	var m msg
	if err := Unmarshal([]byte("{\"content\":\"\xff\"}"), &m); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8: %v, want ErrInvalidUTF8", err)
	}
}

// Keys repeat anywhere: nested objects, objects in arrays, values the
// target keeps raw. Each error names both keys; the same key in two
// different objects is fine.
func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name, in      string
		first, second string // "" for no error
	}{
		{"flat", `{"a":1,"b":2}`, "", ""},
		{"same key in sibling objects", `{"x":{"a":1},"y":{"a":2}}`, "", ""},
		{"same key in array items", `[{"a":1},{"a":2}]`, "", ""},
		{"nested repeat", `{"x":{"id":1,"ID":2}}`, "id", "ID"},
		{"repeat in an array item", `{"attachments":[{"sha256":"a","Sha256":"b"}]}`, "sha256", "Sha256"},
		{"repeat after a nested value", `{"a":{"b":[1,{"c":null}]},"A":0}`, "a", "A"},
		{"scalar", `"x"`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKeys([]byte(tc.in))
			var dup *DuplicateKeyError
			switch {
			case tc.first == "" && err != nil:
				t.Fatalf("CheckKeys(%s) = %v, want nil", tc.in, err)
			case tc.first != "" && (!errors.As(err, &dup) || dup.First != tc.first || dup.Second != tc.second):
				t.Fatalf("CheckKeys(%s) = %v, want %q then %q", tc.in, err, tc.first, tc.second)
			case tc.first != "" && !strings.Contains(err.Error(), strconv.Quote(tc.second)):
				t.Fatalf("error %q does not name the key %q", err, tc.second)
			}
		})
	}
}

// FuzzCheckKeys: on valid JSON, CheckKeys fails only with a
// *DuplicateKeyError whose keys fold alike, and accepts an object only if
// decoding it into a map keeps every key it sent (none was shadowed).
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{`{"content":"a","Content":"b"}`, `{"a":{"b":1},"c":[{"d":2,"D":3}]}`,
		`{"k":1,"\u212a":2}`, `[]`, `{"a":1}`, `{"ſ":1,"s":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckKeys(b)
		if !json.Valid(b) {
			return
		}
		var dup *DuplicateKeyError
		if err != nil {
			if !errors.As(err, &dup) || fold(dup.First) != fold(dup.Second) {
				t.Fatalf("CheckKeys(%q) = %v on valid JSON", b, err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if tok, _ := dec.Token(); tok != json.Delim('{') {
			return
		}
		n := 0
		for dec.More() {
			dec.Token() // the key
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				t.Fatalf("re-reading %q", b)
			}
			n++
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || len(m) != n {
			t.Fatalf("CheckKeys accepted %q, but a map keeps %d of its %d keys", b, len(m), n)
		}
	})
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"content":"hi"}`))
	f.Add([]byte(`{"content":"hi"} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m struct {
			Content string `json:"content"`
		}
		_ = Unmarshal(b, &m) // never panics
	})
}
