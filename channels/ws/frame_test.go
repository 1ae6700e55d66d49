package ws

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestDecodeFrame(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     clientFrame
		wantCode string
	}{
		{"message", `{"type":"message","content":"hi","client_msg_id":"c-1"}`, clientFrame{Type: "message", Content: "hi", ClientMsgID: "c-1"}, ""},
		{"attachments", `{"type":"message","content":"","attachments":["ab","cd"]}`, clientFrame{Type: "message", Attachments: []string{"ab", "cd"}}, ""},
		{"attachments not strings", `{"type":"message","content":"x","attachments":[{"sha256":"ab"}]}`, clientFrame{}, "bad_json"},
		{"command", `{"type":"command","action":"cancel"}`, clientFrame{Type: "command", Action: "cancel"}, ""},
		{"unknown field", `{"type":"message","content":"x","extra":[1,{"a":2}]}`, clientFrame{}, "bad_json"},
		{"approve", `{"type":"command","action":"approve","id":"a7"}`, clientFrame{Type: "command", Action: "approve", ID: "a7"}, ""},
		{"unknown type is the read loop's to refuse", `{"type":"nope"}`, clientFrame{Type: "nope"}, ""},
		{"null", `null`, clientFrame{}, ""},
		{"invalid UTF-8", "{\"type\":\"message\",\"content\":\"\xff\"}", clientFrame{}, "invalid_utf8"},
		{"not JSON", `hello`, clientFrame{}, "bad_json"},
		{"an array", `[1,2]`, clientFrame{}, "bad_json"},
		{"a string", `"message"`, clientFrame{}, "bad_json"},
		{"wrong field type", `{"type":1}`, clientFrame{}, "bad_json"},
		{"cut short", `{"type":"mess`, clientFrame{}, "bad_json"},
		{"trailing garbage", `{"type":"message"} x`, clientFrame{}, "bad_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeFrame([]byte(tc.in))
			var fe *frameError
			switch {
			case tc.wantCode == "" && err != nil:
				t.Fatalf("decodeFrame(%q): %v, want %+v", tc.in, err, tc.want)
			case tc.wantCode != "" && (!errors.As(err, &fe) || fe.code != tc.wantCode):
				t.Fatalf("decodeFrame(%q): %v, want code %s", tc.in, err, tc.wantCode)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("decodeFrame(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzDecodeFrame: any frame decodes or is refused with a *frameError,
// never a panic; invalid UTF-8 is always refused; an accepted frame is
// JSON (an object or null) whose fields are valid UTF-8 and survive a
// round trip.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","content":"hello","client_msg_id":"c-1"}`,
		`{"type":"command","action":"cancel"}`, `{"type":"command","action":"reset"}`,
		`{"type":"message","content":"\u00e9\ud83d\ude00 \n\t\u0000"}`, `{"type":"message","content":"\ud800"}`,
		`{"TYPE":"message","Content":"x"}`, `{"type":"message","type":"command"}`, `{"type":null}`,
		`null`, `[]`, `{}`, `1`, `"x"`, `{"type":1}`, `{"type":"message"`, "{\"content\":\"\xff\"}",
		`{"a":[[[[[[[[[[{}]]]]]]]]]]}`, ` {"type":"message"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeFrame(b)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) || fe.code == "" || fe.msg == "" {
				t.Fatalf("decodeFrame(%q): %v is not a frameError with a code and a message", b, err)
			}
			if fe.code == "invalid_utf8" && utf8.Valid(b) {
				t.Fatalf("decodeFrame(%q): valid UTF-8 refused as invalid", b)
			}
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("decodeFrame(%q) accepted invalid UTF-8", b)
		}
		if !json.Valid(b) {
			t.Fatalf("decodeFrame(%q) accepted invalid JSON", b)
		}
		if v := bytes.TrimSpace(b); v[0] != '{' && !bytes.Equal(v, []byte("null")) {
			t.Fatalf("decodeFrame(%q) accepted a JSON value that is not an object", b)
		}
		for _, s := range []string{fr.Type, fr.Content, fr.ClientMsgID, fr.Action} {
			if !utf8.ValidString(s) {
				t.Fatalf("decodeFrame(%q): field %q is not valid UTF-8", b, s)
			}
		}
		again, _ := json.Marshal(fr)
		if got, err := decodeFrame(again); err != nil || !reflect.DeepEqual(got, fr) {
			t.Fatalf("round trip of %+v: %+v, %v", fr, got, err)
		}
	})
}
