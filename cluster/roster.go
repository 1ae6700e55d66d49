package cluster

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// NodesSubject carries each node's announcement on core NATS: its name and
// public URL, every second while it runs, and once more as it stops.
const NodesSubject = "frontdesk.nodes"

const (
	announceEvery = time.Second
	// aliveFor is how long a node counts as alive after its last
	// announcement: three missed in a row and it is not.
	aliveFor = 3 * time.Second
)

// Member is one node of the cluster as this node sees it, for
// /api/session's cluster.nodes.
type Member struct {
	Name string `json:"name"`
	// URL is the node's public URL (cluster.public_url), "" when unknown.
	URL string `json:"url"`
	// Alive says the node announced itself within the last 3 s (this node
	// always is).
	Alive bool `json:"alive"`
}

type announcement struct {
	Node string `json:"node"`
	URL  string `json:"url"`
	Gone bool   `json:"gone,omitempty"` // the node is stopping
}

type heard struct {
	url  string
	at   time.Time
	gone bool
}

// Roster tells which nodes are alive and where people reach them. Each
// node announces itself on NodesSubject every second; a node heard within
// aliveFor is alive. Liveness is taken from these announcements rather
// than from the log stream's replica info because they need no stream
// leader (with two of three nodes down the stream has none and its info
// cannot be read) and come from the node's process itself, not from
// whether its Raft peer answered lately. The names it lists are those it
// heard and the log stream's peers (Node.Nodes): a node that died before
// this one started is still listed, not alive.
type Roster struct {
	n   *Node
	url string

	mu    sync.Mutex
	heard map[string]heard
}

// NewRoster makes the roster of node n, whose own public URL is publicURL
// ("" when unknown). Run starts it.
func NewRoster(n *Node, publicURL string) *Roster {
	return &Roster{n: n, url: publicURL, heard: map[string]heard{}}
}

// Run announces this node every second and records the others'
// announcements until ctx ends; then it announces that this node is going.
func (r *Roster) Run(ctx context.Context) error {
	sub, err := r.n.nc.Subscribe(NodesSubject, r.receive)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	t := time.NewTicker(announceEvery)
	defer t.Stop()
	for {
		r.announce(false)
		select {
		case <-ctx.Done():
			r.announce(true)
			r.n.nc.FlushTimeout(200 * time.Millisecond)
			return nil
		case <-t.C:
		}
	}
}

func (r *Roster) announce(gone bool) {
	b, _ := json.Marshal(announcement{Node: r.n.cfg.Node, URL: r.url, Gone: gone})
	if err := r.n.nc.Publish(NodesSubject, b); err != nil && !gone {
		r.n.log.Debug("cluster: announce this node", "err", err)
	}
}

// receive records an announcement; it runs on the NATS client's goroutine.
func (r *Roster) receive(m *nats.Msg) {
	var a announcement
	if json.Unmarshal(m.Data, &a) != nil || a.Node == "" || a.Node == r.n.cfg.Node || len(a.Node) > 64 {
		return
	}
	if !webURL(a.URL) {
		a.URL = "" // a page is sent there: nothing but an http(s) address
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard[a.Node] = heard{url: a.URL, at: time.Now(), gone: a.Gone}
}

func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// Members lists the cluster's nodes, sorted by name: this node (alive),
// each node heard from and each peer of the log stream.
func (r *Roster) Members() []Member {
	names := r.n.Nodes()
	now := time.Now()
	r.mu.Lock()
	heard := make(map[string]heard, len(r.heard))
	for name, h := range r.heard {
		heard[name] = h
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	r.mu.Unlock()
	self := r.n.cfg.Node
	if !slices.Contains(names, self) {
		names = append(names, self)
	}
	slices.Sort(names)
	out := make([]Member, 0, len(names))
	for _, name := range names {
		if name == self {
			out = append(out, Member{Name: name, URL: r.url, Alive: true})
			continue
		}
		h, ok := heard[name]
		out = append(out, Member{Name: name, URL: h.url, Alive: ok && !h.gone && now.Sub(h.at) < aliveFor})
	}
	return out
}
