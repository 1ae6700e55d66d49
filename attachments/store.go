// Package attachments is the content-addressed file store: every file a
// door receives (an upload, an email attachment) is kept once per content
// under data_dir/attachments/<sha256[:2]>/<sha256>, its type sniffed from
// its bytes. It is storage: it imports only event of ours; main wires it
// into the hub, the doors and the agents. Nothing is ever deleted.
package attachments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
	"github.com/frontdesk-hq/frontdesk/internal/diskerr"
)

// Defaults of the limits (attachments.max_bytes, attachments.max_per_message).
const (
	DefaultMaxBytes      = 20 << 20
	DefaultMaxPerMessage = 10
)

// ErrBadHash is what Stat, Open and Path callers get for an id that is
// not 64 lower-case hex digits. It wraps fs.ErrInvalid so that packages
// which may not import this one (web, the hub) can tell it apart from
// fs.ErrNotExist (a well-formed id nothing was stored under).
var ErrBadHash = fmt.Errorf("an attachment id is the file's sha256: 64 lower-case hex digits: %w", fs.ErrInvalid)

// TooLargeError is why Put refused a file: it is over Limit bytes.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the file is larger than %s (attachments.max_bytes)", event.FormatSize(e.Limit))
}

// Store is the attachment store. Its methods may be called from any
// goroutine: files are written under temporary names and renamed into
// place, and a file once in place never changes.
type Store struct {
	dir      string
	maxBytes int64
}

// Open opens (creating it, 0700) the store in dir. maxBytes caps each
// file; 0 means DefaultMaxBytes. Temporary files a crash left behind are
// removed.
func Open(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create attachment store: %w", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	for _, p := range left {
		_ = os.Remove(p)
	}
	return &Store{dir: dir, maxBytes: maxBytes}, nil
}

// tempPattern names files being written; they start with a dot so they
// can never be taken for a stored file.
const tempPattern = ".put-*"

// MaxBytes is the per-file limit.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// ValidHash reports whether h is a sha256 as the store names files: 64
// lower-case hex digits. It is the one check of an attachment id.
func ValidHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// meta is the sidecar <sha256>.json beside each file: the name it was
// last stored under and its sniffed type.
type meta struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Put stores what r yields under the sha256 of its content and returns
// its record: Name is name sanitised (SanitizeName), Type sniffed from the
// bytes (Sniff), whatever the sender claimed. A file over the limit is a
// *TooLargeError; a read error is returned wrapped (errors.Is sees it); a
// write that fails (a full disk) is a *diskerr.WriteError. On any error
// no partial file is left on disk (a whole one may stay when only its
// name record failed). Storing bytes already stored keeps the one
// copy and records name as the latest name of the hash.
func (s *Store) Put(r io.Reader, name string) (event.Attachment, error) {
	fault := func(err error) (event.Attachment, error) {
		return event.Attachment{}, diskerr.Wrap("store attachment", err)
	}
	tmp, err := os.CreateTemp(s.dir, tempPattern)
	if err != nil {
		return fault(err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	head, err := readHead(r)
	if err != nil {
		return event.Attachment{}, fmt.Errorf("read attachment: %w", err)
	}
	n := len(head)
	dst := &writeErr{w: tmp}
	w := io.MultiWriter(dst, h)
	if _, err := w.Write(head); err != nil {
		return fault(err)
	}
	size := int64(n)
	if n == sniffLen {
		m, err := io.Copy(w, io.LimitReader(r, s.maxBytes-size+1))
		size += m
		if dst.err != nil {
			return fault(dst.err)
		}
		if err != nil {
			return event.Attachment{}, fmt.Errorf("read attachment: %w", err)
		}
	}
	if size > s.maxBytes {
		return event.Attachment{}, &TooLargeError{Limit: s.maxBytes}
	}
	if err := tmp.Sync(); err != nil {
		return fault(err)
	}
	if err := tmp.Close(); err != nil {
		return fault(err)
	}
	a := event.Attachment{SHA256: hex.EncodeToString(h.Sum(nil)), Name: SanitizeName(name), Type: Sniff(head, name), Size: size}
	sub := filepath.Join(s.dir, a.SHA256[:2])
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return fault(err)
	}
	final := filepath.Join(sub, a.SHA256)
	if _, err := os.Stat(final); err == nil {
		os.Remove(tmp.Name()) // the same bytes are there already
	} else if err := os.Rename(tmp.Name(), final); err != nil {
		return fault(err)
	}
	ok = true
	// The content is whole and on disk from here; a record that cannot be
	// written fails the upload (a retry finds the content and writes it).
	b, _ := json.Marshal(meta{Name: a.Name, Type: a.Type})
	if err := atomicfile.Write(final+".json", b, 0o600); err != nil {
		return fault(err)
	}
	if err := atomicfile.SyncDir(sub); err != nil {
		return fault(err)
	}
	return a, nil
}

// writeErr remembers the first error its writer returned, so that Put
// tells a failed write (the disk) from a failed read (the sender).
type writeErr struct {
	w   io.Writer
	err error
}

func (w *writeErr) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// Path is where the file named h is (or would be). h must be valid
// (ValidHash); an invalid one yields "".
func (s *Store) Path(h string) string {
	if !ValidHash(h) {
		return ""
	}
	return filepath.Join(s.dir, h[:2], h)
}

// Stat returns the record of the file named h: ErrBadHash for a malformed
// id, an error wrapping fs.ErrNotExist for an unknown one.
func (s *Store) Stat(h string) (event.Attachment, error) {
	f, a, err := s.Open(h)
	if err != nil {
		return a, err
	}
	f.Close()
	return a, nil
}

// Open opens the file named h for reading and returns its record (see
// Stat for the errors). The caller closes the file.
func (s *Store) Open(h string) (*os.File, event.Attachment, error) {
	if !ValidHash(h) {
		return nil, event.Attachment{}, ErrBadHash
	}
	p := s.Path(h)
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, event.Attachment{}, fmt.Errorf("no attachment %s: %w", h, fs.ErrNotExist)
		}
		return nil, event.Attachment{}, fmt.Errorf("open attachment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, event.Attachment{}, fmt.Errorf("open attachment: %w", err)
	}
	a := event.Attachment{SHA256: h, Size: fi.Size()}
	var m meta
	if b, err := os.ReadFile(p + ".json"); err == nil && json.Unmarshal(b, &m) == nil {
		a.Name, a.Type = m.Name, m.Type
	}
	if a.Type == "" {
		// The sidecar is lost (a crash between the file and it): sniff again.
		head := make([]byte, sniffLen)
		n, _ := f.ReadAt(head, 0)
		a.Type = Sniff(head[:n], "")
	}
	if a.Name == "" {
		a.Name = h[:12]
	}
	return f, a, nil
}

// readHead reads up to sniffLen bytes. Only io.EOF ends a file: an
// io.ErrUnexpectedEOF from r (a truncated multipart body) is an error, not
// a short file, which io.ReadFull would not tell apart.
func readHead(r io.Reader) ([]byte, error) {
	head := make([]byte, sniffLen)
	n := 0
	for n < len(head) {
		m, err := r.Read(head[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return head[:n], nil
}

// Remove deletes the file named h and its name record, for an erase: the
// caller has checked that no message still refers to it. An unknown
// file is no error.
func (s *Store) Remove(h string) error {
	p := s.Path(h)
	if p == "" {
		return ErrBadHash
	}
	for _, f := range []string{p, p + ".json"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return diskerr.Wrap("remove attachment", err)
		}
	}
	return nil
}
