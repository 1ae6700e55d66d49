package email

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// maxRememberedKeys bounds the message keys kept in state.json for
// deduplication (a mail delivered twice, a rescan after UIDVALIDITY changed).
const maxRememberedKeys = 2000

// mailboxState is the cursor of one mailbox.
type mailboxState struct {
	UIDValidity uint32 `json:"uidvalidity"`
	// LastUID is the highest UID handled (answered or skipped): the next
	// fetch asks for LastUID+1:*.
	LastUID uint32 `json:"last_uid"`
	// Since is when the cursor was first placed. On a rescan (UIDVALIDITY
	// changed) mail that arrived before it is not answered.
	Since time.Time `json:"since"`
	// RescanTo is the last UID when UIDVALIDITY was found changed: mail up
	// to it is matched against Keys and Since instead of being taken as new.
	RescanTo uint32 `json:"rescan_to,omitempty"`
	// Keys are the keys of recently handled mail, oldest first.
	Keys []string `json:"keys"`
}

func (m *mailboxState) known(key string) bool {
	for _, k := range m.Keys {
		if k == key {
			return true
		}
	}
	return false
}

func (m *mailboxState) remember(key string) {
	if key == "" || m.known(key) {
		return
	}
	m.Keys = append(m.Keys, key)
	if n := len(m.Keys) - maxRememberedKeys; n > 0 {
		m.Keys = append([]string(nil), m.Keys[n:]...)
	}
}

type stateFile struct {
	V         int                      `json:"v"`
	Mailboxes map[string]*mailboxState `json:"mailboxes"`
}

// inboxItem is an accepted mail waiting for its turn and reply.
type inboxItem struct {
	V int `json:"v"`
	// Key names the files (inbox/<key>.json, outbox/<key>.json) and is the
	// dedup key in state.json.
	Key         string    `json:"key"`
	ClientMsgID string    `json:"client_msg_id"`
	From        string    `json:"from"`
	Subject     string    `json:"subject"`
	Content     string    `json:"content"`
	MessageID   string    `json:"message_id,omitempty"` // without <>
	References  []string  `json:"references,omitempty"` // without <>
	UIDValidity uint32    `json:"uidvalidity"`
	UID         uint32    `json:"uid"`
	Received    time.Time `json:"received"`
	Seq         int64     `json:"seq"` // arrival order
	// Attachments are the mail's files, already in the attachment store.
	Attachments []event.Attachment `json:"attachments,omitempty"`
}

// outboxItem is a reply not yet accepted by the SMTP server.
type outboxItem struct {
	V          int       `json:"v"`
	Key        string    `json:"key"`
	From       string    `json:"from"`
	To         string    `json:"to"`
	Subject    string    `json:"subject"`
	MessageID  string    `json:"message_id"` // chosen once, so a resend is recognisable
	InReplyTo  string    `json:"in_reply_to,omitempty"`
	References []string  `json:"references,omitempty"`
	Body       string    `json:"body"`
	Note       string    `json:"note,omitempty"` // the turn status when Body is a note, not a reply
	Created    time.Time `json:"created"`
	// Received is when the mail answered was fetched (zero in replies
	// queued by older versions), for the receive→answer time.
	Received  time.Time `json:"received,omitzero"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
}

// spool holds the channel's files. state is read and written only by the
// receiver goroutine; inbox/ is written by the receiver and consumed by the
// worker; outbox/ is written by the worker and consumed by the sender.
type spool struct {
	dir    string
	state  stateFile
	inbox  string
	outbox string
	failed string
}

func openSpool(dir string) (*spool, error) {
	s := &spool{dir: dir, inbox: filepath.Join(dir, "inbox"),
		outbox: filepath.Join(dir, "outbox"), failed: filepath.Join(dir, "failed")}
	for _, d := range []string{dir, s.inbox, s.outbox, s.failed} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	b, err := os.ReadFile(s.statePath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.state = stateFile{V: 1}
	case err != nil:
		return nil, fmt.Errorf("read email state: %w", err)
	default:
		if err := json.Unmarshal(b, &s.state); err != nil {
			return nil, fmt.Errorf("read %s: %w (fix or remove it; removing it means mail already in the mailbox is not answered)", s.statePath(), err)
		}
	}
	if s.state.Mailboxes == nil {
		s.state.Mailboxes = map[string]*mailboxState{}
	}
	return s, nil
}

func (s *spool) statePath() string { return filepath.Join(s.dir, "state.json") }

// saveState writes state.json atomically (temp file, fsync, rename).
func (s *spool) saveState() error {
	s.state.V = 1
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.statePath(), b, 0o600)
}

// spoolError is a write to the spool that failed (a full disk, say): the
// mail it was about is not lost — it is fetched again, or stays in inbox/
// or outbox/ — but nothing moves until the spool can be written.
type spoolError struct{ err error }

func (e *spoolError) Error() string { return e.err.Error() }
func (e *spoolError) Unwrap() error { return e.err }

// keyOf turns a client_msg_id into a file-name-safe key.
func keyOf(clientMsgID string) string {
	h := sha256.Sum256([]byte(clientMsgID))
	return hex.EncodeToString(h[:12])
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

func (s *spool) inboxPath(key string) string   { return filepath.Join(s.inbox, key+".json") }
func (s *spool) pendingPath(key string) string { return filepath.Join(s.inbox, key+".pending") }
func (s *spool) outboxPath(key string) string  { return filepath.Join(s.outbox, key+".json") }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// jsonFiles lists dir's *.json files (not the atomic writer's temp files).
func jsonFiles(dir string) ([]string, error) { return filesWith(dir, ".json") }

// filesWith lists dir's regular files ending in suffix, but not the
// atomic writer's hidden temp files.
func filesWith(dir, suffix string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, suffix) && !strings.HasPrefix(n, ".") {
			names = append(names, filepath.Join(dir, n))
		}
	}
	return names, nil
}

// inboxItems returns the committed mail in arrival order. Unreadable files
// are moved aside (renamed *.bad) and reported, never retried forever.
func (s *spool) inboxItems() ([]inboxItem, []error) { return s.readInbox(".json") }

// pendingItems returns the recorded but not yet committed mail.
func (s *spool) pendingItems() ([]inboxItem, []error) { return s.readInbox(".pending") }

func (s *spool) readInbox(suffix string) ([]inboxItem, []error) {
	paths, err := filesWith(s.inbox, suffix)
	if err != nil {
		return nil, []error{err}
	}
	items, errs := readAll[inboxItem](paths)
	sort.Slice(items, func(i, j int) bool {
		if items[i].Seq != items[j].Seq {
			return items[i].Seq < items[j].Seq
		}
		return items[i].Key < items[j].Key
	})
	return items, errs
}

// readAll decodes every file in paths. An unreadable one is moved aside
// (renamed *.bad) and reported, never retried forever.
func readAll[T any](paths []string) ([]T, []error) {
	var items []T
	var errs []error
	for _, p := range paths {
		var it T
		if err := readJSON(p, &it); err != nil {
			errs = append(errs, err)
			_ = os.Rename(p, p+".bad")
			continue
		}
		items = append(items, it)
	}
	return items, errs
}

// outboxItems returns the unsent replies, oldest first.
func (s *spool) outboxItems() ([]outboxItem, []error) {
	paths, err := jsonFiles(s.outbox)
	if err != nil {
		return nil, []error{err}
	}
	items, errs := readAll[outboxItem](paths)
	sort.Slice(items, func(i, j int) bool {
		if !items[i].Created.Equal(items[j].Created) {
			return items[i].Created.Before(items[j].Created)
		}
		return items[i].Key < items[j].Key
	})
	return items, errs
}
