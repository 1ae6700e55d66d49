package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestIssueCheckRevoke(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	s, err := New(Memory{}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	secret, cred, err := s.Issue(KindToken, "ann", "laptop", "", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "fd_") || len(secret) != 29 || cred.Hash != Hash(secret) || cred.ID != cred.Hash[:12] {
		t.Fatalf("Issue = %q %+v", secret, cred)
	}
	if strings.Contains(cred.Hash, secret) || cred.Label != "laptop" {
		t.Fatalf("credential %+v", cred)
	}
	if _, _, err := s.Issue(KindToken, "ann", "laptop", "", 0); !errors.Is(err, ErrExists) {
		t.Fatalf("a second token labelled laptop: %v, want ErrExists", err)
	}
	if got, ok := s.Check(secret, KindToken); !ok || got.Person != "ann" {
		t.Fatalf("Check = %+v %v", got, ok)
	}
	if _, ok := s.Check(secret, KindSession); ok {
		t.Fatal("a token opened a session check")
	}
	if _, ok := s.Check(secret+"x", KindToken); ok {
		t.Fatal("a wrong secret passed")
	}
	ch := s.Changed()
	c.t = c.t.Add(24 * time.Hour)
	if _, ok := s.Check(secret, KindToken); ok || s.Valid(cred.ID) {
		t.Fatal("an expired token passed")
	}
	if _, err := s.Revoke(cred.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("Changed() did not fire on revoke")
	}
	if _, err := s.Revoke(cred.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
}

func TestRedeemOnce(t *testing.T) {
	c := &clock{time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	s, _ := New(Memory{}, c.now)
	link, _, err := s.Issue(KindLink, "bo", "", "", LinkTTL)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Redeem(link); err != nil || got.Person != "bo" {
		t.Fatalf("Redeem = %+v %v", got, err)
	}
	if _, err := s.Redeem(link); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Redeem = %v, want ErrNotFound", err)
	}
	late, _, _ := s.Issue(KindLink, "bo", "", "", LinkTTL)
	c.t = c.t.Add(LinkTTL)
	if _, err := s.Redeem(late); !errors.Is(err, ErrExpired) {
		t.Fatalf("Redeem after 15 min = %v, want ErrExpired", err)
	}
	if len(s.List("bo")) != 0 {
		t.Fatalf("links left: %+v", s.List("bo"))
	}
}
