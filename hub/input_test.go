package hub

import (
	"errors"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

func TestCleanInput(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		wantContent string
		wantFrom    string
		wantErr     error
	}{
		{"plain", Input{Channel: "web", Content: "hello"}, "hello", "", nil},
		{"invisible prefix", Input{Channel: "web", Content: "\u001c\u001c/status"}, "/status", "", nil},
		{"terminal escape", Input{Channel: "webhook", Content: "a\x1b[2J\x1b]0;pwned\x07b"}, "a[2J]0;pwnedb", "", nil},
		{"newline and tab kept, CR dropped", Input{Channel: "email", Content: "one\r\ntwo\tthree"}, "one\ntwo\tthree", "", nil},
		{"DEL and C1", Input{Channel: "console", Content: "x\x7fy\u0085z\u009b"}, "xyz", "", nil},
		{"NUL", Input{Channel: "web", Content: "a\x00b"}, "ab", "", nil},
		{"invalid UTF-8", Input{Channel: "console", Content: "a\xffb"}, "a\uFFFDb", "", nil},
		{"unicode untouched", Input{Channel: "web", Content: "héllo — 日本 🙂\u200d"}, "héllo — 日本 🙂\u200d", "", nil},
		{"from is one line", Input{Channel: "webhook", From: "ann\n\x1b[31mroot\t", Content: "hi"}, "hi", "ann[31mroot", nil},
		{"only control characters", Input{Channel: "web", Content: "\x1c\x1c\x00"}, "", "", ErrEmpty},
		{"only white space", Input{Channel: "web", Content: " \n\t "}, "", "", ErrEmpty},
		{"longest client_msg_id", Input{Channel: "web", Content: "hi", ClientMsgID: strings.Repeat("i", MaxClientMsgIDBytes)}, "hi", "", nil},
		{"client_msg_id too long", Input{Channel: "web", Content: "hi", ClientMsgID: strings.Repeat("i", MaxClientMsgIDBytes+1)}, "", "", ErrClientMsgIDTooLong},
		{"bad channel name", Input{Channel: "Web Chat", Content: "hi"}, "", "", ErrBadChannel},
		{"no channel", Input{Content: "hi"}, "", "", ErrBadChannel},
		{"60,000-byte client_msg_id", Input{Channel: "web", Content: "hi", ClientMsgID: strings.Repeat("i", 60000)}, "", "", ErrClientMsgIDTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := clean(tc.in, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.Content != tc.wantContent || got.From != tc.wantFrom {
				t.Fatalf("got content %q from %q, want %q from %q", got.Content, got.From, tc.wantContent, tc.wantFrom)
			}
		})
	}
}

func TestCheckCallerChannel(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"webhook", nil},
		{"cron", nil},
		{"mail-bridge", nil},
		{"web", ErrReservedChannel},
		{"console", ErrReservedChannel},
		{"email", ErrReservedChannel},
		{"schedule", ErrReservedChannel},
		{"mcp", ErrReservedChannel},
		{"Email", ErrBadChannel},
		{"", ErrBadChannel},
		{"e mail", ErrBadChannel},
	}
	for _, tc := range tests {
		if err := CheckCallerChannel(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("CheckCallerChannel(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSubmitCleansWhatIsEchoed: the echo every client sees and the log
// carry the cleaned content, whichever door it came from.
func TestSubmitCleansWhatIsEchoed(t *testing.T) {
	g := testagent.NewGate()
	h := startHub(t, Config{}, g)
	s, _ := subscribe(t, h, 0)
	if _, err := h.Submit(ctxT(t), Input{Channel: event.ChannelConsole, Content: "\u001c\u001c/status"}); err != nil {
		t.Fatal(err)
	}
	e := next(t, s)
	if d := data[event.UserData](t, e); e.Type != event.User || d.Content != "/status" {
		t.Fatalf("echo %s %q, want user %q", e.Type, d.Content, "/status")
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	if evs := readLog(t, h.dir); len(evs) == 0 || data[event.UserData](t, evs[0]).Content != "/status" {
		t.Fatalf("logged %v, want the cleaned input first", evs)
	}
}
