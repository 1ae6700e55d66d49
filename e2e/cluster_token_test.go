package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// On a cluster of three real processes the credentials live in the
// replicated bucket: a token added through one node's admin socket is in
// every node's store, a revocation on another node removes it from all
// (the time it took is logged), the holder logs each change once, and a
// stopped node's command says it needs a running node.
func TestClusterTokenRevokedEverywhere(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	list := func(i int) string {
		_, out, code := tokenCmd(t, c.nodes[i].dir, "token", "list", "-config", c.nodes[i].cfg)
		if code != 0 {
			t.Fatalf("list on %s: exit %d\n%s", c.nodes[i].name, code, out)
		}
		return out
	}
	// Added on a follower.
	f := (h + 1) % 3
	tok, out, code := tokenCmd(t, c.nodes[f].dir, "token", "add", "owner", "-label", "ci-bot", "-config", c.nodes[f].cfg)
	if code != 0 || !strings.HasPrefix(tok, "fd_") {
		t.Fatalf("add on %s: exit %d\n%s", c.nodes[f].name, code, out)
	}
	for i := range 3 {
		waitFor(t, 10*time.Second, func() bool { return strings.Contains(list(i), "ci-bot") }, c.nodes[i].name+" lists the new token")
	}
	// Revoked on another node: gone from every node's store.
	r := (h + 2) % 3
	start := time.Now()
	if _, out, code := tokenCmd(t, c.nodes[r].dir, "token", "revoke", "owner", "ci-bot", "-config", c.nodes[r].cfg); code != 0 {
		t.Fatalf("revoke on %s: exit %d\n%s", c.nodes[r].name, code, out)
	}
	for i := range 3 {
		waitFor(t, 10*time.Second, func() bool { return !strings.Contains(list(i), "ci-bot") }, c.nodes[i].name+" forgets the revoked token")
	}
	t.Logf("revocation on %s seen by every node's store within %v", c.nodes[r].name, time.Since(start))

	// The holder logged each change once (replicated to every node's log).
	waitFor(t, 10*time.Second, func() bool {
		n := 0
		for _, e := range readChatLog(t, c.nodes[h].data) {
			if e.Type == event.PersonChanged {
				n++
			}
		}
		return n == 2
	}, "two person_changed events in the holder's log")
	for i := range 3 {
		noSecretIn(t, c.nodes[i].data, tok)
	}

	// A stopped node cannot change the cluster's credentials on its own.
	c.kill(r)
	_, out, code = tokenCmd(t, c.nodes[r].dir, "token", "add", "owner", "-config", c.nodes[r].cfg)
	if code == 0 || !strings.Contains(out, "needs a running node") {
		t.Fatalf("stopped node: exit %d\n%s", code, out)
	}
}

// waitFor polls cond until it holds or wait passes.
func waitFor(t *testing.T, wait time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
