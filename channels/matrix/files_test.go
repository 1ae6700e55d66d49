//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"maunium.net/go/mautrix/crypto/attachment"
	mevent "maunium.net/go/mautrix/event"

	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// pngBytes is a 1×1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// TestImage: an image ann sends (in an encrypted room: an encrypted
// file) arrives in the log as an attachment with the same bytes.
func TestImage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		encrypted bool
	}{{"plain", false}, {"encrypted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, hub.Config{}, echo{})
			w.startDoor()
			ann := w.person("ann")
			room := ann.Room(w.bot, tc.encrypted)
			content := &mevent.MessageEventContent{MsgType: mevent.MsgImage, Body: "dot.png", FileName: "dot.png",
				Info: &mevent.FileInfo{MimeType: "image/png", Size: len(pngBytes)}}
			data := pngBytes
			var ef *attachment.EncryptedFile
			if tc.encrypted {
				ef = attachment.NewEncryptedFile()
				data = bytes.Clone(pngBytes)
				ef.EncryptInPlace(data)
			}
			up, err := ann.Client().UploadBytes(context.Background(), data, "application/octet-stream")
			if err != nil {
				t.Fatal(err)
			}
			if ef != nil {
				content.File = &mevent.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()}
			} else {
				content.URL = up.ContentURI.CUString()
			}
			msg := ann.Send(room, mevent.EventMessage, content)
			chattest.Eventually(t, "the reply", func() bool { _, ok := ann.ReplyTo(w.bot, msg); return ok })

			us := w.sess.Users()
			if len(us) != 1 || len(us[0].Attachments) != 1 {
				r, _ := ann.ReplyTo(w.bot, msg)
				t.Fatalf("user events = %+v, want one with one attachment (the bot said %q)", us, r.Last)
			}
			a := us[0].Attachments[0]
			f, _, err := w.files.Open(a.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, _ := io.ReadAll(f)
			if !bytes.Equal(got, pngBytes) || a.Name != "dot.png" || a.Type != "image/png" {
				t.Fatalf("attachment %+v with %d bytes, want dot.png image/png with the PNG's %d", a, len(got), len(pngBytes))
			}
		})
	}
}

// TestApproval: the approval request is posted with the reaction hint;
// ann's 👍 on it runs the tool, and the request is edited to say so.
func TestApproval(t *testing.T) {
	var runs atomic.Int32
	w := newWorld(t, hub.Config{Tools: testagent.Confirmed("probe", &runs)}, testagent.CallTool{Name: "probe", Args: `{}`})
	w.startDoor()
	ann := w.person("ann")
	room := ann.Room(w.bot, true)
	msg := ann.Say(room, "go")
	var ask testdendrite.Reply
	chattest.Eventually(t, "the approval request", func() bool {
		var ok bool
		ask, ok = ann.ReplyTo(w.bot, msg)
		return ok && strings.Contains(ask.First, "React 👍 to approve")
	})
	if _, err := ann.Client().SendReaction(context.Background(), room, ask.ID, "👍️"); err != nil {
		t.Fatal(err)
	}
	chattest.Eventually(t, "the tool's run and the marked request", func() bool {
		r, _ := ann.ReplyTo(w.bot, msg)
		return runs.Load() == 1 && strings.Contains(r.Last, "Approved by")
	})
}
