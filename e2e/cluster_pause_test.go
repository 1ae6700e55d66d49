package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// pause sends node i SIGSTOP; resume sends SIGCONT.
func (c *testCluster) pause(i int)  { c.signal(i, syscall.SIGSTOP) }
func (c *testCluster) resume(i int) { c.signal(i, syscall.SIGCONT) }

func (c *testCluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	if err := c.nodes[i].p.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
}

// leaderOtherThan waits until a running node other than skip leads, and
// returns its index.
func (c *testCluster) leaderOtherThan(skip int, within time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if i == skip || n.p == nil {
				continue
			}
			if s, err := c.session(i); err == nil && s.Cluster != nil && s.Cluster.Role == "leader" {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no node but %s took the lease within %v", c.nodes[skip].name, within)
	return -1
}

// turnOf finds the user event with client_msg_id id in node i's chat log
// and reports whether its turn has a turn_end there.
func (c *testCluster) turnOf(i int, id string) (user *event.Event, ended bool) {
	evs := readChatLog(c.t, c.nodes[i].data)
	for k, e := range evs {
		if e.Type != event.User {
			continue
		}
		var d event.UserData
		if e.Decode(&d) != nil || d.ClientMsgID != id {
			continue
		}
		user = &evs[k]
		for _, f := range evs[k+1:] {
			if f.Type == event.TurnEnd && f.Turn == e.Turn {
				return user, true
			}
		}
		return user, false
	}
	return nil, false
}

// closedOrAbsent waits until node i's chat log holds input id with a
// turn_end (run or closed with a reason), or, if absent, for a short
// while to be sure it does not come; it fails when the input sits in the
// log open.
func (c *testCluster) closedOrAbsent(i int, id string, within time.Duration) (stored bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		u, ended := c.turnOf(i, id)
		if ended {
			return true
		}
		if time.Now().After(deadline) {
			if u != nil {
				c.t.Fatalf("input %s is in the log at seq %d and its turn was neither run nor closed within %v", id, u.Seq, within)
			}
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterPausedHolderCannotAppend: the holder is stopped (SIGSTOP) on
// an idle desk for longer than its lease; another node takes over and
// writes nothing of the conversation. An input posted to the paused node
// is read when it is continued: it must not land in the log as if the
// paused node still held the lease. Whatever the node answers must be
// true — 202 means the input is in the log and is run (or closed with a
// reason) by the holder within the failover time; no_leader means it is
// not in the log — and the nodes agree afterwards.
func TestClusterPausedHolderCannotAppend(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	for round := range 2 {
		h := c.holder()
		c.idle()
		c.pause(h)
		c.leaderOtherThan(h, 20*time.Second)
		id := "paused-" + string(rune('a'+round))
		type answer struct {
			code int
			body []byte
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			code, body, err := c.postInputTo(c.nodes[h].p.url, "sent to a paused holder", id)
			got <- answer{code, body, err}
		}()
		time.Sleep(200 * time.Millisecond) // the request waits in the paused node's accept queue
		c.resume(h)
		a := <-got
		if a.err != nil {
			t.Fatalf("round %d: post to the resumed node: %v", round, a.err)
		}
		t.Logf("round %d: the resumed node answered %d %s", round, a.code, a.body)
		stored := c.closedOrAbsent(c.holder(), id, 5*time.Second)
		switch {
		case a.code == http.StatusAccepted && !stored:
			t.Fatalf("round %d: answered 202 but the input is not in the log", round)
		case a.code == http.StatusServiceUnavailable && strings.Contains(string(a.body), `"no_leader"`) && stored:
			t.Fatalf("round %d: answered no_leader (nothing stored) but the input is in the log", round)
		case strings.Contains(string(a.body), "storage_error"):
			t.Fatalf("round %d: a lost lease answered as a disk fault: %s", round, a.body)
		}
		c.agree(10 * time.Second)
	}
}

// TestClusterTimedOutAppendIsNotNothingSaved: both followers are paused
// for longer than an append waits, so the holder's append of an input
// gets no quorum and times out. It must not answer "nothing was saved"
// (storage_error): it does not know. Once the followers are back, the
// input is either not in the log or in it and run or closed; and a
// resend with the same client_msg_id leaves it in the log once.
func TestClusterTimedOutAppendIsNotNothingSaved(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	c.idle()
	var others []int
	for i := range c.nodes {
		if i != h {
			others = append(others, i)
		}
	}
	for _, i := range others {
		c.pause(i)
	}
	code, body, err := c.postInputTimeout(c.nodes[h].p.url, "no quorum", "nq-1", 20*time.Second)
	for _, i := range others {
		c.resume(i)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the holder without a quorum answered %d %s", code, body)
	if strings.Contains(string(body), "storage_error") || strings.Contains(string(body), "nothing was saved") {
		t.Fatalf("an append that timed out was answered as nothing saved: %d %s", code, body)
	}
	if code == http.StatusAccepted {
		t.Fatalf("an append without a quorum was acknowledged: %s", body)
	}
	// As the answer says: send it again with the same client_msg_id.
	var tries []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, body, err = c.postInput(c.holder(), "no quorum", "nq-1", false)
		if err == nil && (code == http.StatusAccepted || code == http.StatusOK) {
			break // 200: a duplicate of the input the log already holds
		}
		tries = append(tries, fmt.Sprintf("%d %s %v", code, body, err))
		if time.Now().After(deadline) {
			t.Fatalf("the resend was not accepted within 20 s:\n%s", strings.Join(tries, "\n"))
		}
		time.Sleep(time.Second)
	}
	h = c.holder()
	if !c.closedOrAbsent(h, "nq-1", 10*time.Second) {
		t.Fatal("the resend was acknowledged but is not in the log")
	}
	n := 0
	for _, e := range readChatLog(t, c.nodes[h].data) {
		var d event.UserData
		if e.Type == event.User && e.Decode(&d) == nil && d.ClientMsgID == "nq-1" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("input nq-1 is in the log %d times, want once", n)
	}
	c.agree(10 * time.Second)
}

// agree waits until every running node reports the same last_seq and
// busy flag as the holder.
func (c *testCluster) agree(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		h := c.holder()
		hs, err := c.session(h)
		same := err == nil
		var views []string
		for i, n := range c.nodes {
			if n.p == nil {
				continue
			}
			s, err := c.session(i)
			b, _ := json.Marshal(s)
			views = append(views, string(b))
			if err != nil || s.LastSeq != hs.LastSeq || s.Busy != hs.Busy {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the nodes disagree after %v: %s", within, strings.Join(views, " "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
