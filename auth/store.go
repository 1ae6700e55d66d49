// Package auth keeps frontdesk's credentials: people's API tokens, web
// sign-in sessions, one-time login links and OIDC bindings. Secrets are
// stored only as SHA-256 hashes (a token is 128 random bits, so a hash is
// as good as a slow KDF and costs nanoseconds on the hot path); a lookup
// hashes what was presented and compares in constant time.
//
// A Store is safe for concurrent use. Its Backend persists it (a file in
// data_dir, or the cluster's replicated state) and tells it of changes
// made elsewhere (the command line, another node).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Kind is what a credential is for.
type Kind string

// Credential kinds.
const (
	KindToken   Kind = "token"   // an API token: Bearer, or exchanged for a web session
	KindSession Kind = "session" // a web sign-in: the HttpOnly cookie
	KindLink    Kind = "link"    // a one-time login link (15 minutes)
	KindOIDC    Kind = "oidc"    // an OIDC issuer+subject bound to a person (Hash of both)
)

// LinkTTL is how long a login link works.
const LinkTTL = 15 * time.Minute

// Credential is one stored credential: never the secret, only its hash.
type Credential struct {
	// ID is public (listed, revoked by, named in person_changed events):
	// the first 12 hex digits of Hash.
	ID      string    `json:"id"`
	Kind    Kind      `json:"kind"`
	Person  string    `json:"person"`
	Label   string    `json:"label,omitempty"`
	Hash    string    `json:"hash"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"` // zero: never
	// Via is how a session signed in: link, token, proxy, oidc.
	Via string `json:"via,omitempty"`
	// Role and Name, on an OIDC binding only, make its Person a guest: one
	// let in by auth.oidc.new_people, known to no people entry.
	Role string `json:"role,omitempty"`
	Name string `json:"name,omitempty"`
}

// Expired reports whether c no longer works at now.
func (c Credential) Expired(now time.Time) bool { return !c.Expires.IsZero() && !now.Before(c.Expires) }

// Backend persists a Store. Put and Delete write through (an error means
// nothing changed); Load reads everything at start; Watch calls back for
// changes made by others until ctx ends.
type Backend interface {
	Load() ([]Credential, error)
	Put(c Credential) error
	Delete(id string) error
}

// Errors.
var (
	ErrNotFound = errors.New("no such credential")
	ErrExists   = errors.New("a credential with that label exists")
	ErrExpired  = errors.New("the credential has expired")
)

// Store holds the credentials in memory, by their public id, and writes
// through its Backend.
type Store struct {
	be  Backend
	now func() time.Time

	mu      sync.Mutex
	byID    map[string]Credential // by ID, the first 12 hex digits of Hash
	changed chan struct{}         // closed and replaced at every change
}

// New loads a store from be. now is time.Now unless a test sets it.
func New(be Backend, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{be: be, now: now, byID: map[string]Credential{}, changed: make(chan struct{})}
	list, err := be.Load()
	if err != nil {
		return nil, fmt.Errorf("load credentials: %w", err)
	}
	for _, c := range list {
		s.byID[c.ID] = c
	}
	return s, nil
}

// Hash is the stored form of a secret.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// NewSecret returns a fresh secret of kind: "fd_" + 26 base32 characters
// (128 bits) for a token, "fds_…" for a session, "fdl_…" for a link.
func NewSecret(k Kind) string {
	prefix := map[Kind]string{KindToken: "fd_", KindSession: "fds_", KindLink: "fdl_"}[k]
	return prefix + rand.Text()
}

// Issue stores a new credential of kind for person and returns its
// secret — the only time the secret exists outside the caller. ttl 0
// means it never expires.
func (s *Store) Issue(k Kind, person, label, via string, ttl time.Duration) (string, Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var secret string
	var c Credential
	for { // a new id: two secrets sharing 48 bits of hash is a lottery win, but cheap to rule out
		secret = NewSecret(k)
		c = Credential{Kind: k, Person: person, Label: label, Hash: Hash(secret), Created: s.now().UTC(), Via: via}
		c.ID = c.Hash[:12]
		if _, taken := s.byID[c.ID]; !taken {
			break
		}
	}
	if ttl > 0 {
		c.Expires = c.Created.Add(ttl)
	}
	if k == KindToken && label != "" {
		for _, o := range s.byID {
			if o.Kind == k && o.Person == person && o.Label == label {
				return "", Credential{}, fmt.Errorf("%w: %s already has a token labelled %q", ErrExists, person, label)
			}
		}
	}
	if err := s.be.Put(c); err != nil {
		return "", Credential{}, err
	}
	s.byID[c.ID] = c
	s.notifyLocked()
	return secret, c, nil
}

// Check returns the credential secret opens, if it is stored, of one of
// kinds, and not expired. The presented secret is hashed and the hash
// compared in constant time.
func (s *Store) Check(secret string, kinds ...Kind) (Credential, bool) {
	h := Hash(secret)
	s.mu.Lock()
	c, ok := s.byID[h[:12]]
	s.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare([]byte(c.Hash), []byte(h)) != 1 {
		return Credential{}, false
	}
	if !slices.Contains(kinds, c.Kind) || c.Expired(s.now()) {
		return Credential{}, false
	}
	return c, true
}

// Redeem uses up a login link: the link's credential, deleted, if secret
// opens one that has not expired.
func (s *Store) Redeem(secret string) (Credential, error) {
	h := Hash(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[h[:12]]
	if !ok || c.Kind != KindLink || subtle.ConstantTimeCompare([]byte(c.Hash), []byte(h)) != 1 {
		return Credential{}, ErrNotFound
	}
	if err := s.be.Delete(c.ID); err != nil {
		return Credential{}, err
	}
	delete(s.byID, c.ID)
	s.notifyLocked()
	if c.Expired(s.now()) {
		return Credential{}, ErrExpired
	}
	return c, nil
}

// Valid reports whether the credential with id is still stored and not
// expired: an open WebSocket asks after every change.
func (s *Store) Valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[id]
	return ok && !c.Expired(s.now())
}

// Revoke deletes the credential with id (a public id), returning it.
func (s *Store) Revoke(id string) (Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byID[id]
	if !ok {
		return Credential{}, ErrNotFound
	}
	if err := s.be.Delete(id); err != nil {
		return Credential{}, err
	}
	delete(s.byID, id)
	s.notifyLocked()
	return c, nil
}

// List returns the credentials of person ("" for everyone's), oldest first.
func (s *Store) List(person string) []Credential {
	s.mu.Lock()
	var out []Credential
	for _, c := range s.byID {
		if person == "" || c.Person == person {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Credential) int { return a.Created.Compare(b.Created) })
	return out
}

// Changed returns a channel closed at the next change, local or seen
// through the Backend (Apply): open WebSockets re-check their credential.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Apply takes a change the Backend saw elsewhere: c stored (put) or the
// credential with id gone (c zero, id set).
func (s *Store) Apply(c Credential, deletedID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if deletedID != "" {
		delete(s.byID, deletedID)
	} else {
		s.byID[c.ID] = c
	}
	s.notifyLocked()
}

func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Memory is a Backend that keeps nothing: for tests and for a server
// whose credentials live only as long as it runs.
type Memory struct{}

// Load implements Backend.
func (Memory) Load() ([]Credential, error) { return nil, nil }

// Put implements Backend.
func (Memory) Put(Credential) error { return nil }

// Delete implements Backend.
func (Memory) Delete(string) error { return nil }
