package web_test

// Browser test of the page on a cluster node while no node runs the
// assistant: the real server behind a relay that plays such a node.

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
)

// deskRelay stands between the page and a real server as a cluster node
// whose cluster has no lease holder would: while noDesk is set, its
// /api/session says no node holds the lease (role electing) and it
// answers each message frame itself with the error frame such a node
// sends (no_leader, naming the message); otherwise it relays every frame
// both ways and names n1 the holder. Everything else is the server's.
type deskRelay struct {
	t        *testing.T
	upstream *url.URL
	noDesk   atomic.Bool
	mu       sync.Mutex
	ids      []string // client_msg_id of each message frame the page sent
	refused  atomic.Int32
}

func newDeskRelay(t *testing.T, srv *liveServer) (*deskRelay, string) {
	t.Helper()
	up, err := url.Parse(srv.url())
	if err != nil {
		t.Fatal(err)
	}
	d := &deskRelay{t: t, upstream: up}
	mux := http.NewServeMux()
	mux.Handle("/", httputil.NewSingleHostReverseProxy(up))
	mux.HandleFunc("GET /api/session", d.session)
	mux.HandleFunc("GET /ws", d.ws)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return d, "http://" + ln.Addr().String() + "/"
}

func (d *deskRelay) session(w http.ResponseWriter, r *http.Request) {
	resp, err := http.Get(d.upstream.String() + "api/session")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	var s map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	leader, role := "n1", "follower"
	if d.noDesk.Load() {
		leader, role = "", "electing"
	}
	s["cluster"] = map[string]any{"node": "n2", "leader": leader, "role": role, "nodes": []map[string]any{
		{"name": "n1", "url": "", "alive": !d.noDesk.Load()}, {"name": "n2", "url": "", "alive": true}}}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s)
}

func (d *deskRelay) ws(w http.ResponseWriter, r *http.Request) {
	page, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer page.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	server, _, err := websocket.Dial(ctx, "ws://"+d.upstream.Host+"/ws?"+r.URL.RawQuery, nil)
	if err != nil {
		return
	}
	defer server.CloseNow()
	go func() { // the server's frames to the page
		defer cancel()
		for {
			typ, b, err := server.Read(ctx)
			if err != nil || page.Write(ctx, typ, b) != nil {
				return
			}
		}
	}()
	for {
		typ, b, err := page.Read(ctx)
		if err != nil {
			return
		}
		var f struct {
			Type        string `json:"type"`
			ClientMsgID string `json:"client_msg_id"`
		}
		json.Unmarshal(b, &f)
		if f.Type == "message" {
			d.mu.Lock()
			d.ids = append(d.ids, f.ClientMsgID)
			d.mu.Unlock()
			if d.noDesk.Load() {
				d.refused.Add(1)
				refusal, _ := json.Marshal(map[string]any{"type": "error", "data": map[string]any{"code": "no_leader",
					"message": "no node is running the assistant right now", "client_msg_id": f.ClientMsgID}})
				if page.Write(ctx, websocket.MessageText, refusal) != nil {
					return
				}
				continue
			}
		}
		if server.Write(ctx, typ, b) != nil {
			return
		}
	}
}

// TestBrowserWaitsForTheDesk: while no node runs the assistant the header
// is amber, not "connected"; a message refused with no_leader is sent
// again by the page itself (same client_msg_id) while the page says it
// waits for the desk; once a holder is back it is answered, once, and the
// note goes — nobody clicked Retry. The header then names node and holder.
func TestBrowserWaitsForTheDesk(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{Delay: time.Millisecond})
	relay, addr := newDeskRelay(t, srv)
	relay.noDesk.Store(true)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", addr)
	p.wait("amber: waiting for the desk", `document.querySelector('#conn').dataset.state === 'waiting' &&
		/^waiting for the desk/.test(document.querySelector('#conn-text').textContent)`)

	p.send("hello while they elect")
	p.wait("the message waits for the desk", `document.querySelector('#pending li[data-state="retrying"]') !== null &&
		/waiting for the desk/.test(document.querySelector('#pending .pending-state').textContent) &&
		!document.querySelector('#composer-note').hidden && document.querySelector('#composer-note').dataset.kind === 'wait' &&
		/^Waiting for the desk/.test(document.querySelector('#composer-note').textContent) &&
		document.querySelector('#pending [data-action=retry]').hidden`)
	p.screenshot("waiting-for-the-desk")
	deadline := time.Now().Add(10 * time.Second)
	for relay.refused.Load() < 2 { // sent again by itself, at least once
		if time.Now().After(deadline) {
			t.Fatalf("the page sent the refused message %d times in 10 s, want it sent again by itself", relay.refused.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}

	relay.noDesk.Store(false)
	p.wait("answered, the note gone, connected", jsUserText("hello while they elect")+` && `+jsReplies+` === 1 &&
		document.querySelectorAll('#pending li').length === 0 && document.querySelector('#composer-note').hidden &&
		document.querySelector('#conn').dataset.state === 'connected' &&
		document.querySelector('#conn-text').textContent === 'connected · node n2 · holder n1'`)
	relay.mu.Lock()
	ids := relay.ids
	relay.mu.Unlock()
	for _, id := range ids {
		if id != ids[0] {
			t.Errorf("the page sent client_msg_ids %q, want one", ids)
			break
		}
	}
	n := 0
	for _, u := range srv.userEvents() {
		if u.Content == "hello while they elect" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the server recorded the message %d times, want once", n)
	}
}
