package email

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
)

// spoolReplica is an Options.Replicate that keeps the last snapshot and
// refuses while told to.
type spoolReplica struct {
	mu     sync.Mutex
	last   []byte
	refuse bool
}

func (r *spoolReplica) put(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse {
		return errors.New("no quorum")
	}
	r.last = append([]byte(nil), b...)
	return nil
}

func (r *spoolReplica) get() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *spoolReplica) setRefuse(v bool) {
	r.mu.Lock()
	r.refuse = v
	r.mu.Unlock()
}

// TestReplicaTakesOverWithoutDoubleReply: no reply goes out while the
// spool cannot be replicated; when one is attempted, the replica holds it;
// a second process with its own data directory, given only that replica
// and the shared chat log (a new lease holder after a failover), sends
// the reply once and does not run the mail again.
func TestReplicaTakesOverWithoutDoubleReply(t *testing.T) {
	e := newEnv(t)
	rep := &spoolReplica{refuse: true}
	attempted := make(chan []byte, 10)
	e.smtp.failWith(func(int) error {
		select {
		case attempted <- rep.get():
		default:
		}
		return &smtp.SMTPError{Code: 451, Message: "try later"}
	})
	e.start(func(o *Options) { o.Replicate = rep.put })
	e.connected()
	raw := newMail(ana, "Hand over", "Are you still there?")
	e.imap.deliver(t, raw)
	eventually(t, "a send refused for want of replication", func() bool {
		return e.logs.count("replicate the email spool: no quorum") > 0 && e.logs.count("sending an email reply failed") > 0
	})
	select {
	case <-attempted:
		t.Fatal("a reply reached SMTP while the spool could not be replicated")
	default:
	}
	rep.setRefuse(false)
	snap := <-attempted
	if !bytes.Contains(snap, []byte(`"outbox/`)) {
		t.Fatalf("at the first SMTP attempt the replica holds no reply: %s", snap)
	}
	e.stop()

	// The next holder: its own data directory, the same chat log.
	e.logPath = filepath.Join(e.dir, "chat_history.ndjson")
	e.dir = t.TempDir()
	if err := RestoreSpool(e.dir, rep.get()); err != nil {
		t.Fatal(err)
	}
	e.smtp.failWith(nil)
	e.start()
	got := e.smtp.next(t)
	if inReplyTo(got) != messageID(raw) {
		t.Fatalf("the reply answers %q, want %q", inReplyTo(got), messageID(raw))
	}
	e.connected()
	e.stop()
	e.smtp.none(t)
	if n := len(e.agent.requests()); n != 1 {
		t.Fatalf("the mail ran %d times, want once", n)
	}
}

// TestRestoreSpoolReplacesLocalFiles: a restore leaves exactly the
// replica's state and files; stale local ones are removed.
func TestRestoreSpoolReplacesLocalFiles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write := func(dir, name, body string) {
		p := filepath.Join(dir, "email", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(src, "state.json", `{"v":1}`)
	write(src, "inbox/a.json", `{"key":"a"}`)
	write(src, "inbox/b.pending", `{"key":"b"}`)
	write(src, "outbox/c.json", `{"key":"c"}`)
	write(dst, "state.json", `{"v":1,"old":true}`)
	write(dst, "inbox/old.json", `{}`)
	write(dst, "outbox/old.json", `{}`)
	b, err := snapshotSpool(filepath.Join(src, "email"))
	if err != nil {
		t.Fatal(err)
	}
	if err := RestoreSpool(dst, b); err != nil {
		t.Fatal(err)
	}
	names, err := spoolNames(filepath.Join(dst, "email"))
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Join(names...); got != filepath.Join("inbox/a.json", "inbox/b.pending", "outbox/c.json") {
		t.Fatalf("files after restore: %v", names)
	}
	if st, _ := os.ReadFile(filepath.Join(dst, "email", "state.json")); string(st) != `{"v":1}` {
		t.Fatalf("state after restore: %s", st)
	}
	if err := RestoreSpool(dst, []byte(`{"v":1,"files":{"../x":"e30="}}`)); err == nil {
		t.Fatal("a file name outside the spool was restored")
	}
}
