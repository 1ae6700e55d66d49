package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Meta is what is kept with the credentials besides them: the people of
// the configuration last recorded (to log what changed at the next start)
// and the person_changed events made while the server was stopped, not
// yet in the chat log.
type Meta struct {
	People  []PersonRecord            `json:"people,omitempty"`
	Pending []event.PersonChangedData `json:"pending,omitempty"`
}

// PersonRecord is one person as the audit trail last recorded them.
type PersonRecord struct {
	ID          string   `json:"id"`
	Role        string   `json:"role,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// MetaBackend is a Backend that also keeps Meta (the file and the cluster
// backends do; Memory does not).
type MetaBackend interface {
	Backend
	LoadMeta() (Meta, error)
	SaveMeta(Meta) error
}

// FileName is the credentials file under data_dir/auth.
const FileName = "credentials.json"

// fileData is the file's content.
type fileData struct {
	Credentials []Credential `json:"credentials"`
	Meta
}

// File is the Backend of a single node: data_dir/auth/credentials.json
// (0600 in a 0700 directory), rewritten whole and atomically at every
// change. Only hashes are in it.
type File struct {
	path string
	mu   sync.Mutex
	data fileData
}

// OpenFile opens (or, missing, starts) the credentials file under dir
// (data_dir/auth). A damaged file is an error naming it and what to do.
func OpenFile(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	_ = os.Chmod(dir, 0o700)
	f := &File{path: filepath.Join(dir, FileName)}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f.data); err != nil {
		return nil, fmt.Errorf("credentials file %s is damaged (%v): restore it from a backup, "+
			"or move it aside to start with no tokens or sessions (then issue new ones with frontdesk token add)", f.path, err)
	}
	for _, c := range f.data.Credentials {
		if c.ID == "" || len(c.Hash) != 64 || c.Person == "" {
			return nil, fmt.Errorf("credentials file %s is damaged (a credential without id, hash or person): restore it from a backup, "+
				"or move it aside to start with no tokens or sessions", f.path)
		}
	}
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Load implements Backend.
func (f *File) Load() ([]Credential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.data.Credentials), nil
}

// Put implements Backend.
func (f *File) Put(c Credential) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.data
	next.Credentials = slices.DeleteFunc(slices.Clone(f.data.Credentials), func(o Credential) bool { return o.ID == c.ID })
	next.Credentials = append(next.Credentials, c)
	return f.writeLocked(next)
}

// Delete implements Backend.
func (f *File) Delete(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.data
	next.Credentials = slices.DeleteFunc(slices.Clone(f.data.Credentials), func(o Credential) bool { return o.ID == id })
	return f.writeLocked(next)
}

// LoadMeta implements MetaBackend.
func (f *File) LoadMeta() (Meta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Meta{People: slices.Clone(f.data.People), Pending: slices.Clone(f.data.Pending)}, nil
}

// SaveMeta implements MetaBackend.
func (f *File) SaveMeta(m Meta) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next := f.data
	next.Meta = m
	return f.writeLocked(next)
}

// writeLocked replaces the file with next; on an error nothing changed.
func (f *File) writeLocked(next fileData) error {
	if next.Credentials == nil {
		next.Credentials = []Credential{}
	}
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(f.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	f.data = next
	return nil
}

// LockName is the lock file under data_dir/auth: the server holds it while
// it runs, a command on a stopped server while it writes.
const LockName = "lock"

// ErrLocked says another process holds the credentials.
var ErrLocked = errors.New("another frontdesk process holds the credentials")

// Lock takes the exclusive lock on dir's lock file, waiting up to wait
// for it. Unlock with the returned func.
func Lock(dir string, wait time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	path := filepath.Join(dir, LockName)
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN); fh.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			fh.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w (%s)", ErrLocked, path)
			}
			return nil, fmt.Errorf("credentials: lock %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
