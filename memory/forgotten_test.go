package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

func memEvent(seq int64, d event.MemoryChangedData) event.Event {
	e := event.New(event.MemoryChanged, "", time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC), d)
	e.Seq = seq
	return e
}

// A deleted item is kept as hashes of its words, not its text, and Cut
// takes out the sentences that give it away, and only those.
func TestForgottenCut(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenItems(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []event.Event{
		memEvent(1, event.MemoryChangedData{Action: event.MemorySaved, ID: "m1", Text: "The wifi password is hunter2", Source: SourceAgent}),
		memEvent(2, event.MemoryChangedData{Action: event.MemorySaved, ID: "m2", Text: "Dana's birthday is in June", Source: SourceWeb}),
		memEvent(3, event.MemoryChangedData{Action: event.MemoryDeleted, ID: "m1", By: "web"}),
	} {
		if _, err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ItemsFile))
	for _, w := range []string{"hunter2", "wifi", "password"} {
		if strings.Contains(string(b), w) {
			t.Errorf("items.json holds %q of the forgotten item:\n%s", w, b)
		}
	}
	fs := s.Forgotten()
	cases := []struct{ in, want string }{
		{"The user's wifi password is hunter2. Dana's birthday is in June.", "Dana's birthday is in June."},
		{"- Remember: HUNTER2!", ""},
		{"They talked about the wifi. Then lunch.", "They talked about the wifi. Then lunch."},
		{"Home wifi password: see the router.", ""},
		{"line one\n- the password was hunter2\nline three", "line one\nline three"},
	}
	for _, c := range cases {
		if got, _ := fs.Cut(c.in); got != c.want {
			t.Errorf("Cut(%q): got %q, want %q", c.in, got, c.want)
		}
	}
	// Rebuilt from the log (Reset, replay): still forgotten, once.
	s.Reset()
	for seq := int64(1); seq <= 3; seq++ {
		_, _ = s.Apply(memEvent(seq, event.MemoryChangedData{Action: event.MemorySaved, ID: "m1", Text: "The wifi password is hunter2"}))
	}
	_, _ = s.Apply(memEvent(4, event.MemoryChangedData{Action: event.MemoryDeleted, ID: "m1", By: "web"}))
	if got := len(s.Forgotten()); got != 1 {
		t.Errorf("forgotten after a rebuild: %d entries, want 1", got)
	}
}
