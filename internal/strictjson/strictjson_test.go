package strictjson

import (
	"errors"
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
