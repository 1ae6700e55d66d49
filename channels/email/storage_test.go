package email

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
)

// longBody is more than a tmpfs page: on a full disk it cannot slip into
// the unused end of the chat log's last page.
var longBody = strings.Repeat("Please keep this in mind for later. ", 150)

// answeredOnce waits for the one reply to raw and checks that it is the
// assistant's answer, not a note about a failure.
func (e *env) answeredOnce(raw string) {
	e.t.Helper()
	got := e.smtp.next(e.t)
	if inReplyTo(got) != messageID(raw) || !strings.Contains(got.Body, "reply to: Subject:") {
		e.t.Fatalf("reply to %q: %.200q, want the assistant's answer", inReplyTo(got), got.Body)
	}
	e.stop()
	e.smtp.none(e.t)
	e.spoolEmpty()
	for uid, seen := range e.imap.seen(e.t) {
		if !seen {
			e.t.Errorf("message %d is not \\Seen", uid)
		}
	}
}

func TestMailWaitsWhileTheChatLogCannotBeWritten(t *testing.T) {
	disk := testdisk.New(t) // before newEnv: the process stops before the unmount
	e := newEnv(t)
	e.logPath = filepath.Join(disk.Dir, "chat_history.ndjson")
	e.start()
	e.connected()
	disk.Fail()

	raw := newMail(ana, "Notes", longBody)
	e.imap.deliver(t, raw)
	const failed = "could not hand an email to the session"
	eventually(t, "two attempts to hand the mail over", func() bool { return e.logs.count(failed) >= 2 })
	e.smtp.none(t)
	if n := e.logs.count(`level=WARN msg="` + failed); n != 1 {
		t.Errorf("%d warnings for one failing mail, want 1 (the retries at debug level):\n%s", n, e.logs)
	}
	if items, _ := e.p.ch.spool.inboxItems(); len(items) != 1 {
		t.Fatalf("inbox holds %d mails while the session cannot take them, want 1", len(items))
	}

	disk.Heal()
	e.answeredOnce(raw)
	// The worker logs the recovery after the turn, which may be just after
	// the reply went out.
	eventually(t, "the recovery line", func() bool { return e.logs.count("emails reach the session again") >= 1 })
	if n := e.logs.count("emails reach the session again"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}

// submitWatch passes Submit through to the hub and reports each result.
type submitWatch struct {
	Session
	results chan hub.Result
}

func (w submitWatch) Submit(ctx context.Context, in hub.Input) (hub.Result, error) {
	r, err := w.Session.Submit(ctx, in)
	if err == nil {
		w.results <- r
	}
	return r, err
}

// A mail that arrives while the session is busy and cannot be written to
// the chat log (where it would wait, recorded as queued) is not queued: it
// stays in the spool and is handed over again, not answered with a note;
// once the log takes writes it is recorded, waits its turn and is
// answered once.
func TestQueuedMailNotRecordedIsRetried(t *testing.T) {
	disk := testdisk.New(t) // before newEnv: the process stops before the unmount
	e := newEnv(t)
	if !disk.Full {
		t.Skip("needs a tmpfs (root): the chat log is open before the fault")
	}
	e.logPath = filepath.Join(disk.Dir, "chat_history.ndjson")
	results := make(chan hub.Result, 10)
	e.wrap = func(s Session) Session { return submitWatch{s, results} }
	p := e.start()
	e.connected()

	gate := make(chan struct{})
	e.agent.setGate(gate)
	if r, err := p.hub.Submit(context.Background(), hub.Input{Channel: event.ChannelWeb, Content: "hold on"}); err != nil || r.Outcome != hub.Started {
		t.Fatalf("web input: %+v, %v", r, err)
	}
	<-e.agent.started
	disk.Fail() // the chat log's disk; the spool is elsewhere
	raw := newMail(ana, "Notes", longBody)
	e.imap.deliver(t, raw)
	eventually(t, "the mail to be handed over again", func() bool { return e.logs.count("could not hand an email to the session") >= 1 })
	select {
	case r := <-results:
		t.Fatalf("the mail was taken although the log cannot record it: %+v", r)
	default:
	}
	e.smtp.none(t)

	disk.Heal()
	if r := <-results; r.Outcome != hub.Queued {
		t.Fatalf("mail submitted while busy: %+v, want queued", r)
	}
	close(gate) // the web turn ends; the mail's turn runs
	e.answeredOnce(raw)
}

func TestMailStaysUnseenWhileTheSpoolCannotBeWritten(t *testing.T) {
	disk := testdisk.New(t) // before newEnv: the process stops before the unmount
	e := newEnv(t)
	e.dir = disk.Dir
	e.start()
	eventually(t, "the first start's cursor", func() bool { return e.logs.count("first start: the cursor is placed") == 1 })
	disk.Fail()

	raw := newMail(ana, "Notes", "Remember the milk.")
	e.imap.deliver(t, raw)
	const failed = "cannot write the email spool"
	eventually(t, "two attempts to record the mail", func() bool { return e.logs.count(failed) >= 2 })
	if n := e.logs.count(`level=ERROR msg="` + failed); n != 1 {
		t.Errorf("%d errors for one failing spool, want 1 (the retries at debug level):\n%s", n, e.logs)
	}
	for uid, seen := range e.imap.seen(t) {
		if seen {
			t.Fatalf("message %d was marked \\Seen although it could not be recorded", uid)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dir, "email", "inbox")); len(ents) != 0 {
		t.Fatalf("inbox holds %d files on a spool that cannot be written", len(ents))
	}
	if m := e.p.ch.Metrics(); m.IMAPErrors != 0 {
		t.Errorf("%d IMAP errors counted for a local disk fault", m.IMAPErrors)
	}
	e.smtp.none(t)

	disk.Heal()
	e.answeredOnce(raw)
	if n := e.logs.count("the email spool can be written again"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}
