package hub

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
)

func TestResolveAttachments(t *testing.T) {
	store, err := attachments.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := store.Put(strings.NewReader("one"), "one.txt")
	b, _ := store.Put(strings.NewReader("two"), "two.txt")
	c, _ := store.Put(strings.NewReader("three"), "three.txt")
	m := &SessionManager{cfg: Config{Attachments: store, MaxAttachments: 2}}
	ref := func(sha, name string) event.Attachment { return event.Attachment{SHA256: sha, Name: name} }
	tests := []struct {
		name     string
		in       []event.Attachment
		want     []event.Attachment
		wantCode string
	}{
		{"none", nil, nil, ""},
		{"records filled in", []event.Attachment{ref(a.SHA256, "")}, []event.Attachment{a}, ""},
		{"door's name kept, cleaned", []event.Attachment{ref(b.SHA256, "Mail\x1b[2Jname.txt")},
			[]event.Attachment{{SHA256: b.SHA256, Name: "Mail[2Jname.txt", Type: b.Type, Size: b.Size}}, ""},
		{"a file twice counts once", []event.Attachment{ref(a.SHA256, ""), ref(b.SHA256, ""), ref(a.SHA256, "")}, []event.Attachment{a, b}, ""},
		{"over the limit", []event.Attachment{ref(a.SHA256, ""), ref(b.SHA256, ""), ref(c.SHA256, "")}, nil, "too_many_attachments"},
		{"unknown", []event.Attachment{ref(strings.Repeat("f", 64), "")}, nil, "unknown_attachment"},
		{"malformed", []event.Attachment{ref("../x", "")}, nil, "bad_attachment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.resolveAttachments(Input{Content: "x", Attachments: tc.in})
			var ie *InputError
			switch {
			case tc.wantCode != "":
				if !errors.As(err, &ie) || ie.Code != tc.wantCode {
					t.Fatalf("got %v, want code %s", err, tc.wantCode)
				}
			case err != nil:
				t.Fatal(err)
			case len(got.Attachments) != len(tc.want):
				t.Fatalf("got %+v, want %+v", got.Attachments, tc.want)
			default:
				for i := range tc.want {
					if got.Attachments[i] != tc.want[i] {
						t.Errorf("attachment %d: got %+v, want %+v", i, got.Attachments[i], tc.want[i])
					}
				}
			}
		})
	}
	if _, err := (&SessionManager{}).resolveAttachments(Input{Attachments: []event.Attachment{a}}); err == nil ||
		err.(*InputError).Code != "attachments_disabled" {
		t.Errorf("no store: got %v, want attachments_disabled", err)
	}
	if _, err := clean(Input{Channel: "web", Attachments: []event.Attachment{a}}, 0); err != nil {
		t.Errorf("files without text: %v, want accepted", err)
	}
}

// The history tools show a user event's attachments to the model.
func TestToolEventsShowAttachments(t *testing.T) {
	a := event.Attachment{SHA256: strings.Repeat("a", 64), Name: "invoice.pdf", Type: "application/pdf", Size: 12}
	e := event.New(event.User, "t1", time.Now(), event.UserData{Channel: "web", Content: "see", Attachments: []event.Attachment{a}})
	s, err := toolJSON(toToolEvents([]event.Event{e}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `"attachments":[{"sha256":"`+a.SHA256+`","name":"invoice.pdf","type":"application/pdf","size":12}]`) {
		t.Errorf("tool output %s lacks the attachment", s)
	}
}
