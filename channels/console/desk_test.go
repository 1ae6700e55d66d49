package console

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// noDesk is a real hub behind a cluster node that has no desk for a while:
// its first refuse submits are answered as a node with no lease holder
// answers (hub.ErrNoLeader), then one as a holder that may have died
// (hub.ErrNoAnswer); the next go to the hub. It records each submit's
// client_msg_id.
type noDesk struct {
	*hub.SessionManager
	refuse int
	mu     sync.Mutex
	ids    []string
	at     []time.Time
}

func (d *noDesk) Submit(ctx context.Context, in hub.Input) (hub.Result, error) {
	d.mu.Lock()
	d.ids = append(d.ids, in.ClientMsgID)
	d.at = append(d.at, time.Now())
	n := len(d.ids)
	d.mu.Unlock()
	switch {
	case n < d.refuse:
		return hub.Result{}, hub.ErrNoLeader
	case n == d.refuse:
		return hub.Result{}, hub.ErrNoAnswer
	}
	return d.SessionManager.Submit(ctx, in)
}

// TestConsoleResendsWhileNoDesk: a line typed while no node runs the
// assistant is sent again by itself, with the same client_msg_id, 1 s and
// then 2 s later, and runs once; the terminal says it waits for the desk
// and is not told "not sent"; the prompt takes commands meanwhile.
func TestConsoleResendsWhileNoDesk(t *testing.T) {
	m := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	d := &noDesk{SessionManager: m, refuse: 2}
	in, typed := io.Pipe()
	out := &syncBuffer{}
	repl := make(chan error, 1)
	go func() { repl <- Run(ctx, d, Options{Stdin: in, Stdout: out}) }()

	io.WriteString(typed, "is anyone there\n")
	out.waitFor(t, "waiting for the desk", 1)
	io.WriteString(typed, "/status\n") // the prompt is free while it waits
	out.waitFor(t, "session ", 1)
	out.waitFor(t, "assistant›", 1) // the reply, once it ran
	typed.Close()
	if err := <-repl; err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	ids, at := d.ids, d.at
	d.mu.Unlock()
	if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("submits: %q, want 3 with one client_msg_id", ids)
	}
	if w := at[1].Sub(at[0]); w < 900*time.Millisecond {
		t.Errorf("sent again after %v, want about 1 s", w)
	}
	if w := at[2].Sub(at[1]); w < 1800*time.Millisecond {
		t.Errorf("sent a third time after %v, want about 2 s", w)
	}
	evs, err := m.Recent(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, e := range evs {
		if e.Type == event.User {
			users++
		}
	}
	if users != 1 {
		t.Errorf("%d inputs recorded, want 1", users)
	}
	if got := out.String(); strings.Contains(got, "not sent") {
		t.Errorf("the terminal said not sent:\n%s", got)
	}
}

// TestConsoleStatusNamesNodeAndHolder: on a cluster node /status names
// this node and the holder, or says that no node runs the assistant.
func TestConsoleStatusNamesNodeAndHolder(t *testing.T) {
	m := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	views := []ClusterView{{Node: "n2", Holder: "n1", Role: "follower"}, {Node: "n1", Holder: "n1", Role: "leader"},
		{Node: "n3", Holder: "", Role: "electing"}}
	var mu sync.Mutex
	next := func() ClusterView {
		mu.Lock()
		defer mu.Unlock()
		v := views[0]
		views = views[1:]
		return v
	}
	var out syncBuffer
	if err := Run(ctx, m, Options{Stdin: strings.NewReader("/status\n/status\n/status\n"), Stdout: &out, Cluster: next}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"· node n2 · holder n1", "· node n1 (the holder: it runs the assistant)",
		"· node n3 · no node runs the assistant right now (waiting for the desk)"} {
		if !strings.Contains(got, want) {
			t.Errorf("/status lacks %q:\n%s", want, got)
		}
	}
}
