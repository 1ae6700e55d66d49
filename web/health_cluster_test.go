package web_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/web"
)

// /healthz on a cluster node says whether an input sent to it can be run
// now: not while the lease is held by a name that is no node, nor by a
// node that stopped answering, nor while nobody holds it.
func TestHealthClusterSaysWhetherInputsRun(t *testing.T) {
	var mu sync.Mutex
	var st web.ClusterStatus
	e := start(t, web.Options{Addr: "127.0.0.1:8080", Cluster: func() web.ClusterStatus {
		mu.Lock()
		defer mu.Unlock()
		return st
	}}, &agent.Demo{})
	nodes := []web.ClusterNode{{Name: "a", Alive: true}, {Name: "b", Alive: true}, {Name: "c", Alive: false}}
	for _, tc := range []struct {
		name   string
		st     web.ClusterStatus
		status int
		reason string
	}{
		{"leader", web.ClusterStatus{Node: "a", Leader: "a", Role: "leader", Nodes: nodes}, 200, ""},
		{"follower of a live holder", web.ClusterStatus{Node: "b", Leader: "a", Role: "follower", Nodes: nodes}, 200, ""},
		{"no holder", web.ClusterStatus{Node: "b", Role: "electing", Nodes: nodes}, 503, "no node holds the lease"},
		{"taking over", web.ClusterStatus{Node: "b", Leader: "b", Role: "electing", Nodes: nodes}, 503, "taking over"},
		{"holder gone", web.ClusterStatus{Node: "b", Leader: "c", Role: "follower", Nodes: nodes}, 503, "the lease holder c is not answering"},
		{"holder no node", web.ClusterStatus{Node: "b", Leader: "rogue", Role: "follower", Nodes: nodes}, 503, "which is not a node of this cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			st = tc.st
			mu.Unlock()
			r := do(t, request(t, "GET", e.srv.URL+"/healthz", ""))
			if r.status != tc.status || !strings.Contains(r.raw, tc.reason) {
				t.Fatalf("/healthz = %d %s, want %d with %q", r.status, r.raw, tc.status, tc.reason)
			}
			if tc.status == http.StatusServiceUnavailable && r.body["status"] != "no_leader" {
				t.Fatalf("status %v, want no_leader", r.body["status"])
			}
		})
	}
}
