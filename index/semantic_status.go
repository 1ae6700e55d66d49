package index

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Bounds of an embeddings server whose vectors change dimension. One
// change is a model swapped behind the same name: everything is embedded
// anew at once. A second before a whole pass is done waits dimBackoff;
// at maxDimChanges without a whole pass between them the server is
// answering in more than one dimension (two models behind one name, a
// proxy switching between backends), embedding it would never end, and
// search by meaning stops until the server is restarted or fixed and the
// desk restarted. A whole pass in one dimension forgives the changes.
const (
	dimBackoff    = time.Minute
	maxDimChanges = 3
)

// errEmbedStopped ends the embedding loop: see SemanticStatus.Reason.
var errEmbedStopped = errors.New("search by meaning stopped")

// Semantic states (SemanticStatus.State).
const (
	SemanticOK      = "ok"
	SemanticStopped = "stopped"
	// SemanticUnavailable (hybrid.go): the server fails now.
)

// SemanticStatus says whether search by meaning works, for /healthz and
// /metrics.
type SemanticStatus struct {
	// Configured: an embeddings server is set; nothing else is set
	// without one.
	Configured bool
	// State is SemanticOK, SemanticUnavailable (the server failed its
	// last request: searches answer from keywords, embedding retries) or
	// SemanticStopped (see maxDimChanges).
	State string
	// Reason says why when State is not ok, in one sentence fit for
	// /healthz (no URL, no key).
	Reason string
	// DimChanges counts the dimension changes seen since start.
	DimChanges int64
}

// semState is what the embedding loop and the searches learnt of the
// embeddings server; any goroutine, under mu.
type semState struct {
	mu         sync.Mutex
	failing    string    // the embedding loop's last failure, "" once it works
	queryFail  time.Time // a query's vector failed at; zero once one works
	stopped    string    // why embedding stopped; "" while it runs
	dims       []int     // dimensions seen since the last whole pass
	dimChanges int64
	// wait is the backoff's timer (a test's fake clock); nil: time.After.
	wait func(time.Duration) <-chan time.Time
}

// SemanticStatus reports whether search by meaning works.
func (f *Follower) SemanticStatus() SemanticStatus {
	if f.opts.Embedder == nil {
		return SemanticStatus{}
	}
	s := &f.sem
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SemanticStatus{Configured: true, State: SemanticOK, DimChanges: s.dimChanges}
	switch {
	case s.stopped != "":
		st.State, st.Reason = SemanticStopped, s.stopped
	case s.failing != "" || (!s.queryFail.IsZero() && time.Since(s.queryFail) < semanticPause):
		st.State, st.Reason = SemanticUnavailable, "the embeddings server fails; searches answer from keywords (the log says why)"
	}
	return st
}

// setFailing records the embedding loop's failure (nil: it works).
func (s *semState) setFailing(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = ""
	if err != nil {
		s.failing = err.Error()
	}
}

// setQuery records how a query's vector went.
func (s *semState) setQuery(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queryFail = time.Time{}
	if !ok {
		s.queryFail = time.Now()
	}
}

// isStopped reports whether search by meaning stopped.
func (s *semState) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped != ""
}

// passDone records a whole pass in one dimension: the changes before it
// are forgiven.
func (s *semState) passDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dims = s.dims[:0]
}

// dimChanged records a change from the stored vectors' dimension to dim
// and says what to do: wait d first (0: go on at once), or stop (the
// reason is then in stopped).
func (s *semState) dimChanged(from, dim int) (d time.Duration, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dimChanges++
	if len(s.dims) == 0 {
		s.dims = append(s.dims, from)
	}
	s.dims = append(s.dims, dim)
	n := len(s.dims) - 1
	if n >= maxDimChanges {
		seen := make([]string, len(s.dims))
		for i, x := range s.dims {
			seen[i] = fmt.Sprint(x)
		}
		s.stopped = fmt.Sprintf("the embeddings server answered in %d dimensions one request after another (%s): "+
			"search by meaning stopped, searches answer from keywords; make search.embeddings.model name one model and restart",
			len(uniq(s.dims)), strings.Join(seen, ", "))
		return 0, true
	}
	if n == 1 {
		return 0, false
	}
	return dimBackoff << (n - 2), false
}

func uniq(xs []int) map[int]bool {
	m := map[int]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// backoff waits d (on the test's clock if set), or until ctx ends; it
// reports whether the wait ran out.
func (s *semState) backoff(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	s.mu.Lock()
	wait := s.wait
	s.mu.Unlock()
	if wait == nil {
		wait = time.After
	}
	select {
	case <-wait(d):
		return true
	case <-ctx.Done():
		return false
	}
}
