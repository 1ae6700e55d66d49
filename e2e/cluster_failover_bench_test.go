package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkClusterFailover kills the lease holder of three frontdesk
// processes with SIGKILL FRONTDESK_CLUSTER_KILLS times (default 20) and
// measures, each time, from the kill to a new input answered by a node
// (a webhook POST to a surviving node, tried every few milliseconds, each
// try bounded to 1 s). The killed node is restarted and caught up before
// the next kill (README "Run on several machines": what fails over). It
// also measures the client's view: from its send to its answer, an input
// a client sent to a follower within 20 ms of the kill (clientInput).
func BenchmarkClusterFailover(b *testing.B) {
	kills := 20
	if v, err := strconv.Atoi(os.Getenv("FRONTDESK_CLUSTER_KILLS")); err == nil && v > 0 {
		kills = v
	}
	c := newTestCluster(b, clusterOpts{extra: "channels: {webhook: {rate_per_sec: 1000, rate_burst: 1000}}\n"})
	in := newInputs(c)
	var took, client []time.Duration
	for b.Loop() {
		for k := range kills {
			h := c.holder()
			in.setUp(h, false)
			// A client posts one input to a follower around the kill (up
			// to 20 ms before or after: sometimes it is in flight to the
			// holder as it dies) and waits for its answer as the page
			// does: no_leader or no_answer, sent again with the same
			// client_msg_id after Retry-After.
			via := c.nodes[(h+1+k%2)%3].p.url
			lead := time.Duration(rand.IntN(40)-20) * time.Millisecond
			var t0 time.Time
			done := make(chan time.Duration, 1)
			send := func() {
				sent := time.Now()
				done <- c.clientInput(b, via, fmt.Sprint("client-", k)).Sub(sent)
			}
			if lead < 0 {
				go send()
				time.Sleep(-lead)
				t0 = time.Now()
				c.kill(h)
			} else {
				t0 = time.Now()
				c.kill(h)
				time.Sleep(lead)
				go send()
			}
			took = append(took, in.probe(b).Sub(t0))
			client = append(client, <-done)
			c.start(h)
			in.setUp(h, true)
			c.settled(h)
		}
	}
	report(b, "", took)
	report(b, "client_", client)
	b.Logf("kill → a new input answered, %d kills: %v", len(took), took)
	b.Logf("a client's input sent within 20 ms of a kill, from its send to its answer (as the page retries), %d kills: %v", len(client), client)
}

// report sorts d and reports its p50, p90, p99 and max in seconds.
func report(b *testing.B, prefix string, d []time.Duration) {
	slices.Sort(d)
	q := func(p float64) float64 { return d[min(len(d)-1, int(p*float64(len(d))))].Seconds() }
	b.ReportMetric(q(0.5), prefix+"p50_s")
	b.ReportMetric(q(0.9), prefix+"p90_s")
	b.ReportMetric(q(0.99), prefix+"p99_s")
	b.ReportMetric(d[len(d)-1].Seconds(), prefix+"max_s")
}

// clientInput posts content to url's webhook as a patient client: an
// answer of no_leader or no_answer is followed, after its Retry-After, by
// the same input with the same client_msg_id, for up to 30 s. It returns
// when the input was acknowledged (202, or 200 for one the log already
// held, or 409 busy: a node runs the session).
func (c *testCluster) clientInput(b *testing.B, url, id string) time.Time {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		code, body, err := c.postInputTimeout(url, "input "+id, id, 30*time.Second)
		switch {
		case err == nil && (code == http.StatusAccepted || code == http.StatusOK || code == http.StatusConflict):
			return time.Now()
		case err == nil && code == http.StatusServiceUnavailable:
			time.Sleep(time.Second) // Retry-After: 1
		default:
			b.Errorf("client input %s: %d %s %v", id, code, body, err)
			return time.Now()
		}
	}
	b.Errorf("client input %s: not acknowledged within 30 s", id)
	return time.Now()
}
