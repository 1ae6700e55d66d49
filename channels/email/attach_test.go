package email

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// mailPart is one file of a test mail.
type mailPart struct {
	name, ctype, disp string // disp "attachment" or "inline"
	data              []byte
}

// attachMail builds a multipart/mixed mail: a text/plain body, then each
// part base64-encoded, as mail clients send them.
func attachMail(from, subject, text string, parts ...mailPart) string {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	tp, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"text/plain; charset=utf-8"}})
	tp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
	for _, p := range parts {
		h := textproto.MIMEHeader{
			"Content-Type":              {p.ctype},
			"Content-Transfer-Encoding": {"base64"},
		}
		if p.name != "" {
			h.Set("Content-Disposition", fmt.Sprintf("%s; filename=%q", p.disp, p.name))
		} else if p.disp != "" {
			h.Set("Content-Disposition", p.disp)
		}
		w, _ := mw.CreatePart(h)
		enc := base64.StdEncoding.EncodeToString(p.data)
		for len(enc) > 76 {
			fmt.Fprintf(w, "%s\r\n", enc[:76])
			enc = enc[76:]
		}
		fmt.Fprintf(w, "%s\r\n", enc)
	}
	mw.Close()
	return newMail(from, subject, b.String(), "Content-Type: multipart/mixed; boundary="+mw.Boundary())
}

func mailPNG(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// minimalPDF is a tiny but well-formed PDF.
var minimalPDF = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")

// checkMailFiles asserts that the session's input of the mail carries the
// PNG and the PDF, stored byte for byte.
func checkMailFiles(t *testing.T, e *env, png []byte) {
	t.Helper()
	reqs := e.agent.requests()
	if len(reqs) == 0 {
		t.Fatal("no turn ran")
	}
	got := reqs[len(reqs)-1].Attachments
	if len(got) != 2 || got[0].Name != "chart.png" || got[0].Type != "image/png" || got[1].Name != "plan.pdf" || got[1].Type != "application/pdf" {
		t.Fatalf("attachments %+v, want chart.png (image/png) and plan.pdf (application/pdf)", got)
	}
	for a, want := range map[event.Attachment][]byte{got[0]: png, got[1]: minimalPDF} {
		b, err := os.ReadFile(e.files.Path(a.SHA256))
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s stored as %d bytes (%v), want %d", a.Name, len(b), err, len(want))
		}
	}
}

func TestMailAttachmentsStored(t *testing.T) {
	e := newEnv(t)
	var err error
	if e.files, err = attachments.Open(filepath.Join(e.dir, "attachments"), 64<<10); err != nil {
		t.Fatal(err)
	}
	e.start(func(o *Options) { o.MaxAttachments = 2 })
	e.connected()
	img := mailPNG(t)
	raw := attachMail(ana, "numbers", "See attached.",
		mailPart{"chart.png", "image/png", "attachment", img},
		mailPart{"../../plan.pdf", "application/octet-stream", "attachment", minimalPDF},
		mailPart{"third.txt", "text/plain", "attachment", []byte("over the count")},
	)
	e.imap.deliver(t, raw)
	e.smtp.next(t)
	checkMailFiles(t, e, img)
	content := e.agent.requests()[0].Content
	if !strings.Contains(content, `[Attachments not stored: "third.txt" (over the limit of 2 files per message)]`) {
		t.Errorf("content %q does not list the skipped file", content)
	}

	// Too large for the store, and an inline image without a name.
	big := bytes.Repeat([]byte("z"), 65<<10)
	raw = attachMail(ana, "more", "Two more.",
		mailPart{"huge.log", "text/plain", "attachment", big},
		mailPart{"", "image/png", "inline", img},
	)
	e.imap.deliver(t, raw)
	e.smtp.next(t)
	req := e.agent.requests()[1]
	if len(req.Attachments) != 1 || req.Attachments[0].Type != "image/png" || req.Attachments[0].SHA256 != e.agent.requests()[0].Attachments[0].SHA256 {
		t.Errorf("attachments %+v, want the inline PNG (deduplicated with the first mail's)", req.Attachments)
	}
	if !strings.Contains(req.Content, `"huge.log" (65.0 KiB, the file is larger than 64.0 KiB`) {
		t.Errorf("content %q does not say why huge.log was skipped", req.Content)
	}
	left, _ := filepath.Glob(filepath.Join(e.dir, "attachments", ".put-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A real Dovecot delivers a mail with a PNG and a PDF; both reach the
// session stored byte for byte.
func TestDovecotAttachments(t *testing.T) {
	const user, pass = "assistant", "dovecot-secret"
	d := startDovecot(t, user, pass)
	e := newEnv(t)
	var err error
	if e.files, err = attachments.Open(filepath.Join(e.dir, "attachments"), 0); err != nil {
		t.Fatal(err)
	}
	e.start(func(o *Options) {
		o.IMAP.Addr, o.IMAP.Username, o.IMAP.Password = d.addr, user, pass
	})
	e.connected()
	img := mailPNG(t)
	raw := attachMail(ana, "files", "Here they are.",
		mailPart{"chart.png", "image/png", "attachment", img},
		mailPart{"plan.pdf", "application/pdf", "attachment", minimalPDF},
	)
	appendMail(t, d.addr, user, pass, raw)
	if got := e.smtp.next(t); inReplyTo(got) != messageID(raw) {
		t.Fatalf("answered %q, want %q", inReplyTo(got), messageID(raw))
	}
	checkMailFiles(t, e, img)
	if c := e.agent.requests()[0].Content; strings.Contains(c, "not stored") || !strings.Contains(c, "Here they are.") {
		t.Errorf("content %q", c)
	}
}

// A mail whose files were removed from the store between being taken and
// being handed to the session (by hand: frontdesk never deletes them) is
// still answered, without them and saying so, and holds up nothing behind
// it: the session refuses unknown attachments, and a retry would be
// refused forever.
func TestMailAttachmentsRemovedBeforeTurn(t *testing.T) {
	e := newEnv(t)
	var err error
	if e.files, err = attachments.Open(filepath.Join(e.dir, "attachments"), 0); err != nil {
		t.Fatal(err)
	}
	e.wrap = func(s Session) Session { return removeBeforeSubmit{s, e.files} }
	e.start()
	e.connected()
	raw := attachMail(ana, "second", "with a file", mailPart{"chart.png", "image/png", "attachment", mailPNG(t)})
	e.imap.deliver(t, raw)
	if got := e.smtp.next(t); inReplyTo(got) != messageID(raw) {
		t.Fatalf("answered %q, want the mail", inReplyTo(got))
	}
	req := e.agent.requests()[0]
	if len(req.Attachments) != 0 || !strings.Contains(req.Content, "no longer stored") {
		t.Errorf("turn: %d attachments, content %q", len(req.Attachments), req.Content)
	}
	next := newMail(ana, "next", "and this one")
	e.imap.deliver(t, next)
	if got := e.smtp.next(t); inReplyTo(got) != messageID(next) {
		t.Errorf("answered %q, want the next mail", inReplyTo(got))
	}
}

// removeBeforeSubmit deletes an input's stored files just before the
// session sees it.
type removeBeforeSubmit struct {
	Session
	files *attachments.Store
}

func (r removeBeforeSubmit) Submit(ctx context.Context, in hub.Input) (hub.Result, error) {
	for _, a := range in.Attachments {
		if p := r.files.Path(a.SHA256); p != "" {
			os.Remove(p)
		}
	}
	return r.Session.Submit(ctx, in)
}
