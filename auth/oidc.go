package auth

import "fmt"

// OIDCKey is the key of an OIDC binding: the provider's issuer and the
// subject it names, which together never change for one account (an email
// address may).
func OIDCKey(issuer, subject string) string { return issuer + "\x00" + subject }

// Bind stores an OIDC binding of key (OIDCKey) to person: later sign-ins
// with that issuer and subject are person's whatever email the provider
// then reports. The binding never expires; revoking it (Revoke with its
// ID) makes the next sign-in match by email again. Binding a key that is
// already bound returns the existing binding and ErrExists, changing
// nothing.
func (s *Store) Bind(person, key string) (Credential, error) {
	return s.bind(Credential{Kind: KindOIDC, Person: person, Hash: Hash(key), Created: s.now().UTC(), Via: "oidc"})
}

// BindGuest binds key to a new guest person (auth.oidc.new_people): id,
// with role and name, known only to the store. See Guest.
func (s *Store) BindGuest(id, role, name, key string) (Credential, error) {
	return s.bind(Credential{Kind: KindOIDC, Person: id, Hash: Hash(key), Created: s.now().UTC(), Via: "oidc", Role: role, Name: name})
}

// Guest returns the binding that made person a guest, if one did.
func (s *Store) Guest(person string) (Credential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.byID {
		if c.Kind == KindOIDC && c.Person == person && c.Role != "" {
			return c, true
		}
	}
	return Credential{}, false
}

func (s *Store) bind(c Credential) (Credential, error) {
	c.ID = c.Hash[:12]
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.byID[c.ID]; ok && o.Kind == KindOIDC {
		return o, fmt.Errorf("%w: that OIDC account is already bound to %s", ErrExists, o.Person)
	}
	if err := s.be.Put(c); err != nil {
		return Credential{}, err
	}
	s.byID[c.ID] = c
	s.notifyLocked()
	return c, nil
}

// Bound returns the OIDC binding of key (OIDCKey), if there is one.
func (s *Store) Bound(key string) (Credential, bool) {
	return s.Check(key, KindOIDC)
}
