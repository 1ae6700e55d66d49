package schedule

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// replica is an Options.Replicate that keeps the last bytes and fails on
// demand.
type replica struct {
	mu     sync.Mutex
	last   []byte
	fail   bool
	failed chan struct{} // a put refused
}

func (r *replica) put(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		select {
		case r.failed <- struct{}{}:
		default:
		}
		return errors.New("no quorum")
	}
	r.last = append([]byte(nil), b...)
	return nil
}

func (r *replica) get() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *replica) setFail(f bool) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

// TestReplicateBeforeSubmit: every write of schedules.json is handed to
// Options.Replicate with the file's bytes; a firing is submitted only
// after the write recording it was replicated (a new holder after a
// failover then offers the same firing again, never a second one); a
// failed replication refuses a create as a failed write does and holds a
// firing until it can be replicated, when it runs once.
func TestReplicateBeforeSubmit(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	rep := &replica{failed: make(chan struct{}, 1)}
	st := newSteps()
	var atRecorded []byte
	hook := func(name, key string) bool {
		if name == "recorded" {
			atRecorded = rep.get() // on Run's goroutine, as Replicate
		}
		return st.hook(name, key)
	}
	dir := t.TempDir()
	r := newRig(t, dir, clock, &agent.Demo{}, Options{Replicate: rep.put, step: hook, RetryAfter: 10 * time.Second})

	rep.setFail(true)
	_, err := r.sched.Create(ctxT(t), Spec{Content: "refused", InSeconds: 60})
	var e *Error
	if !errors.As(err, &e) || e.Code != "storage_error" {
		t.Fatalf("create with replication failing: %v, want a storage_error", err)
	}
	if list, _ := r.sched.List(ctxT(t)); len(list) != 0 {
		t.Fatalf("a refused create is listed: %+v", list)
	}
	<-rep.failed
	rep.setFail(false)
	sc := r.create(Spec{Content: "Reminder: stretch", InSeconds: 60})
	file, err := os.ReadFile(storePath(dir))
	if err != nil || !bytes.Equal(rep.get(), file) {
		t.Fatalf("replicated bytes differ from schedules.json (err %v):\n%s\n---\n%s", err, rep.get(), file)
	}

	// Due while replication fails: nothing is submitted.
	rep.setFail(true)
	clock.Advance(60 * time.Second)
	<-rep.failed
	// Run holds the firing: its timer is armed for RetryAfter.
	if err := clock.BlockUntil(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if n := len(r.userEvents()); n != 0 {
		t.Fatalf("%d firings submitted while replication failed", n)
	}
	rep.setFail(false)
	k := key(sc)
	clock.Advance(10 * time.Second)
	st.wait(t, "recorded", k)
	if !bytes.Contains(atRecorded, []byte(k)) {
		t.Fatalf("at submit the replica does not record the firing %s:\n%s", k, atRecorded)
	}
	st.wait(t, "settled", k)
	if n := len(r.userEvents()); n != 1 {
		t.Fatalf("%d firings in the log, want 1", n)
	}
	if bytes.Contains(rep.get(), []byte(sc.ID)) {
		t.Fatalf("the settled one-shot is still in the replica:\n%s", rep.get())
	}
}

// TestRunAgainAfterReload: a cluster node that stops leading and leads
// again runs the same Scheduler again: between runs calls are refused as
// stopped, and after Reload the next Run serves what the file holds.
func TestRunAgainAfterReload(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	s, err := Open(nil, Options{DataDir: dir, Clock: clock, TZ: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan error, 1)
		go func() { ended <- s.Run(ctx) }()
		return func() {
			cancel()
			if err := <-ended; err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := run()
	sc, err := s.Create(ctxT(t), Spec{Content: "later", InSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := s.List(ctxT(t)); !errors.Is(err, ErrStopped) {
		t.Fatalf("List between runs: %v, want ErrStopped", err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	stop = run()
	defer stop()
	list, err := s.List(ctxT(t))
	if err != nil || len(list) != 1 || list[0].ID != sc.ID {
		t.Fatalf("List after the second Run: %+v, %v", list, err)
	}
}
