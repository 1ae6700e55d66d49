package auth

import (
	"slices"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Prune deletes the credentials that have expired, returning how many.
func (s *Store) Prune() (int, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, c := range s.byID {
		if !c.Expired(now) {
			continue
		}
		if err := s.be.Delete(id); err != nil {
			return n, err
		}
		delete(s.byID, id)
		n++
	}
	if n > 0 {
		s.notifyLocked()
	}
	return n, nil
}

// Find returns the credential of person labelled label, or with the
// public id label (a session's id).
func (s *Store) Find(person, label string) (Credential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.byID {
		if c.Person != person {
			continue
		}
		if (c.Kind == KindToken && c.Label == label) || c.ID == label {
			return c, true
		}
	}
	return Credential{}, false
}

// Meta returns what the backend keeps besides the credentials (zero for a
// backend that keeps none).
func (s *Store) Meta() (Meta, error) {
	mb, ok := s.be.(MetaBackend)
	if !ok {
		return Meta{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return mb.LoadMeta()
}

// UpdateMeta changes the kept Meta with fn (nothing for a backend that
// keeps none).
func (s *Store) UpdateMeta(fn func(*Meta)) error {
	mb, ok := s.be.(MetaBackend)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := mb.LoadMeta()
	if err != nil {
		return err
	}
	fn(&m)
	return mb.SaveMeta(m)
}

// AddPending keeps d to be appended to the chat log at the next start.
func (s *Store) AddPending(d event.PersonChangedData) error {
	return s.UpdateMeta(func(m *Meta) { m.Pending = append(m.Pending, d) })
}

// DrainPending drops the first n pending changes (appended by then).
func (s *Store) DrainPending(n int) error {
	return s.UpdateMeta(func(m *Meta) { m.Pending = slices.Clone(m.Pending[min(n, len(m.Pending)):]) })
}
