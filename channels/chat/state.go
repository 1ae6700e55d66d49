package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// owed is a reply the Door still owes: a message in the log whose answer
// has not fully reached the chat.
type owed struct {
	Key         string             `json:"key"` // the input's client_msg_id
	Chat        string             `json:"chat"`
	ReplyTo     string             `json:"reply_to,omitempty"`
	Thread      string             `json:"thread,omitempty"`
	From        string             `json:"from"`
	Person      string             `json:"person,omitempty"`
	Content     string             `json:"content"`
	Attachments []event.Attachment `json:"attachments,omitempty"`
	Turn        string             `json:"turn,omitempty"`
	// Posted are the ids of the messages posted for the reply so far, in
	// order: a restart edits them rather than posting again.
	Posted []string `json:"posted,omitempty"`
}

// stateFile is the door's state.json: the connector's cursor and the
// replies owed. Safe for concurrent use; every change is written (and
// replicated) before the method returns.
type stateFile struct {
	path      string
	replicate func([]byte) error

	mu     sync.Mutex
	Cursor string  `json:"cursor"`
	Owed   []*owed `json:"owed"`
	// Delivered are the keys of the last maxDelivered messages answered:
	// a platform that hands one again (Slack re-delivers an envelope whose
	// ack was lost) must not get the reply a second time.
	Delivered []string `json:"delivered,omitempty"`
}

// maxDelivered bounds stateFile.Delivered.
const maxDelivered = 1000

// StateDir is where a door keeps its files: data_dir/<door>.
func StateDir(dataDir, door string) string { return filepath.Join(dataDir, door) }

func openState(dir string, replicate func([]byte) error) (*stateFile, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &stateFile{path: filepath.Join(dir, "state.json"), replicate: replicate}
	return s, s.reload()
}

// reload reads the file again: Run does, for a cluster's new lease
// holder has just written the replicated copy over this node's.
func (s *stateFile) reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.Cursor, s.Owed, s.Delivered = "", nil, nil
		return nil
	}
	if err != nil {
		return err
	}
	var fresh stateFile
	if err := json.Unmarshal(b, &fresh); err != nil {
		return fmt.Errorf("%s is damaged (%v): move it away to start over (messages not yet answered would be lost)", s.path, err)
	}
	s.Cursor, s.Owed, s.Delivered = fresh.Cursor, fresh.Owed, fresh.Delivered
	return nil
}

// save writes the state; the caller holds mu.
func (s *stateFile) save() error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		return err
	}
	if s.replicate != nil {
		return s.replicate(b)
	}
	return nil
}

func (s *stateFile) cursor() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Cursor
}

func (s *stateFile) setCursor(c string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Cursor == c {
		return nil
	}
	s.Cursor = c
	return s.save()
}

// add records o, or returns the entry already owed under its key.
func (s *stateFile) add(o *owed) (*owed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.Owed {
		if have.Key == o.Key {
			return have, nil
		}
	}
	s.Owed = append(s.Owed, o)
	if err := s.save(); err != nil {
		s.Owed = s.Owed[:len(s.Owed)-1]
		return nil, err
	}
	return o, nil
}

// update changes o under the lock and saves.
func (s *stateFile) update(o *owed, f func(o *owed)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(o)
	return s.save()
}

// done drops o: its reply reached the chat.
func (s *stateFile) done(o *owed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Owed = slices.DeleteFunc(s.Owed, func(x *owed) bool { return x == o })
	if !slices.Contains(s.Delivered, o.Key) {
		s.Delivered = append(s.Delivered, o.Key)
		if n := len(s.Delivered) - maxDelivered; n > 0 {
			s.Delivered = slices.Delete(s.Delivered, 0, n)
		}
	}
	return s.save()
}

// delivered says whether the message with key was answered already.
func (s *stateFile) delivered(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.Delivered, key)
}

func (s *stateFile) owedNow() []*owed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.Owed)
}

// SnapshotState returns the door's state.json as written (nil if none):
// what a cluster replicates.
func SnapshotState(dataDir, door string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(StateDir(dataDir, door), "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// RestoreState writes a replicated state.json into this node's data
// directory, before the door starts here.
func RestoreState(dataDir, door string, b []byte) error {
	var probe stateFile
	if err := json.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("the replicated %s state is damaged: %w", door, err)
	}
	dir := StateDir(dataDir, door)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "state.json"), b, 0o600)
}
