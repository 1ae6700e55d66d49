package testdendrite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestInviteJoinMessage is the kit's proof: two accounts on a fresh
// server; ann creates a room and invites bob, bob joins, ann sends a
// message and bob's /sync delivers it — plain client-server API calls.
func TestInviteJoinMessage(t *testing.T) {
	Binaries(t) // a cold build is not part of the start time below
	start := time.Now()
	s := Start(t)
	took := time.Since(start)
	rss, rssErr := rssKB(s.PID())

	ann, annTok := s.CreateAccount(t, "ann", "ann-password")
	bob, bobTok := s.CreateAccount(t, "bob", "bob-password")
	if want := "@ann:" + ServerName; ann != want {
		t.Fatalf("got user id %q, want %q", ann, want)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var created struct {
		RoomID string `json:"room_id"`
	}
	must(t, s.Do(ctx, http.MethodPost, "/_matrix/client/v3/createRoom", annTok,
		map[string]any{"preset": "private_chat", "name": "kit"}, &created))
	room := created.RoomID
	must(t, s.Do(ctx, http.MethodPost, "/_matrix/client/v3/rooms/"+PathEscape(room)+"/invite", annTok,
		map[string]string{"user_id": bob}, nil))

	// bob learns of the invite through /sync, as a client would.
	next := syncUntil(ctx, t, s, bobTok, "", func(r *syncResponse) bool {
		_, ok := r.Rooms.Invite[room]
		return ok
	})
	must(t, s.Do(ctx, http.MethodPost, "/_matrix/client/v3/rooms/"+PathEscape(room)+"/join", bobTok,
		map[string]any{}, nil))

	var sent struct {
		EventID string `json:"event_id"`
	}
	must(t, s.Do(ctx, http.MethodPut, "/_matrix/client/v3/rooms/"+PathEscape(room)+"/send/m.room.message/txn1", annTok,
		map[string]string{"msgtype": "m.text", "body": "hello bob"}, &sent))

	var got event
	syncUntil(ctx, t, s, bobTok, next, func(r *syncResponse) bool {
		for _, e := range r.Rooms.Join[room].Timeline.Events {
			if e.Type == "m.room.message" {
				got = e
				return true
			}
		}
		return false
	})
	if got.EventID != sent.EventID || got.Sender != ann || got.Content.Body != "hello bob" {
		t.Errorf("bob's sync got %s from %s: %q; want %s from %s: %q",
			got.EventID, got.Sender, got.Content.Body, sent.EventID, ann, "hello bob")
	}

	t.Logf("warm start to /versions answering: %s", took.Round(time.Millisecond))
	if rssErr != nil {
		t.Logf("dendrite RSS: %v", rssErr)
	} else if after, err := rssKB(s.PID()); err == nil {
		t.Logf("dendrite RSS: %.1f MB idle after start, %.1f MB after two accounts and a room", float64(rss)/1024, float64(after)/1024)
	}
}

// TestRestart checks that a server killed and started again keeps its
// port, accounts, tokens and rooms, as a door's fault tests need.
func TestRestart(t *testing.T) {
	s := Start(t)
	ann, annTok := s.CreateAccount(t, "ann", "ann-password")
	var created struct {
		RoomID string `json:"room_id"`
	}
	must(t, s.Do(t.Context(), http.MethodPost, "/_matrix/client/v3/createRoom", annTok, map[string]any{}, &created))
	before := s.URL

	s.Stop(t)
	if err := s.Do(t.Context(), http.MethodGet, "/_matrix/client/v3/account/whoami", annTok, nil, nil); err == nil {
		t.Fatal("a stopped server answered")
	}
	s.Restart(t)

	if s.URL != before {
		t.Errorf("got URL %s after restart, want %s", s.URL, before)
	}
	var who struct {
		UserID string `json:"user_id"`
	}
	must(t, s.Do(t.Context(), http.MethodGet, "/_matrix/client/v3/account/whoami", annTok, nil, &who))
	if who.UserID != ann {
		t.Errorf("whoami after restart: got %q, want %q", who.UserID, ann)
	}
	var joined struct {
		Rooms []string `json:"joined_rooms"`
	}
	must(t, s.Do(t.Context(), http.MethodGet, "/_matrix/client/v3/joined_rooms", annTok, nil, &joined))
	if len(joined.Rooms) != 1 || joined.Rooms[0] != created.RoomID {
		t.Errorf("joined rooms after restart: got %v, want [%s]", joined.Rooms, created.RoomID)
	}
}

// TestLoginWrongPassword checks that a homeserver's refusal reaches the
// caller of Do as an *APIError with its Matrix errcode.
func TestLoginWrongPassword(t *testing.T) {
	s := Start(t)
	s.CreateAccount(t, "ann", "ann-password")
	err := s.Do(t.Context(), http.MethodPost, "/_matrix/client/v3/login", "", map[string]any{
		"type":       "m.login.password",
		"identifier": map[string]string{"type": "m.id.user", "user": "ann"},
		"password":   "wrong-password",
	}, nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "M_FORBIDDEN" {
		t.Fatalf("login with a wrong password: got %v, want M_FORBIDDEN", err)
	}
}

// BenchmarkStart reports what one test server costs: the time from
// Start to /versions answering (the build is cached beforehand) and the
// dendrite process's RSS once it answers.
func BenchmarkStart(b *testing.B) {
	Binaries(b)
	var took time.Duration
	var rss int64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		s := Start(b)
		took += time.Since(start)
		kb, err := rssKB(s.PID())
		if err != nil {
			b.Skipf("no RSS here: %v", err)
		}
		rss += kb
		s.Stop(b)
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/start")
	b.ReportMetric(float64(rss)/1024/float64(b.N), "MB-rss")
}

type event struct {
	Type    string `json:"type"`
	EventID string `json:"event_id"`
	Sender  string `json:"sender"`
	Content struct {
		Body string `json:"body"`
	} `json:"content"`
}

type syncResponse struct {
	NextBatch string `json:"next_batch"`
	Rooms     struct {
		Invite map[string]any `json:"invite"`
		Join   map[string]struct {
			Timeline struct {
				Events []event `json:"events"`
			} `json:"timeline"`
		} `json:"join"`
	} `json:"rooms"`
}

// syncUntil long-polls /sync from since until done accepts a response and
// returns the next batch token: the server answers as soon as something
// arrives, so there is no sleeping here.
func syncUntil(ctx context.Context, t *testing.T, s *Server, token, since string, done func(*syncResponse) bool) string {
	t.Helper()
	for {
		q := url.Values{"timeout": {"10000"}}
		if since != "" {
			q.Set("since", since)
		}
		var r syncResponse
		if err := s.Do(ctx, http.MethodGet, "/_matrix/client/v3/sync?"+q.Encode(), token, nil, &r); err != nil {
			t.Fatalf("sync: %v", err)
		}
		since = r.NextBatch
		if done(&r) {
			return since
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rssKB reads a process's resident set from /proc (Linux only).
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); n == 1 {
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%s/status", strconv.Itoa(pid))
}
