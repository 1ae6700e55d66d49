// Package web is the HTTP server: the embedded chat UI, /ws, the JSON API,
// /healthz and /metrics, behind the Host, Origin and token checks.
package web

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/people"
)

//go:embed static
var static embed.FS

// Session is the part of the hub the API uses.
type Session interface {
	Info(ctx context.Context) (hub.Info, error)
	CancelBy(ctx context.Context, a hub.Actor) (bool, error)
	Reset(ctx context.Context, reason string, a hub.Actor) (event.ResetData, error)
	Decide(ctx context.Context, id, decision string, a hub.Actor) (event.ApprovalResultData, error)
	Recent(ctx context.Context, n int) ([]event.Event, error)
	Range(ctx context.Context, from, to string, limit int) ([]event.Event, bool, error)
	Search(ctx context.Context, query string, limit int) (hub.SearchResult, error)
	MemoryList(ctx context.Context) ([]memory.Item, error)
	MemorySave(ctx context.Context, text string, a hub.Actor) (memory.Item, error)
	MemoryEdit(ctx context.Context, id, text string, a hub.Actor) (memory.Item, error)
	MemoryForget(ctx context.Context, id string, a hub.Actor) error
	Erase(ctx context.Context, seq int64, a hub.Actor) (event.ErasedData, error)
}

var _ Session = (*hub.SessionManager)(nil)

// ClusterStatus is a cluster node's view: its name, the lease holder
// ("" while none is known), its role (leader, follower, electing) and the
// nodes it knows.
type ClusterStatus struct {
	Node   string        `json:"node"`
	Leader string        `json:"leader"`
	Role   string        `json:"role"`
	Nodes  []ClusterNode `json:"nodes"`
}

// ClusterNode is one node of the cluster: its name, its public URL (""
// when unknown) and whether it is up now.
type ClusterNode struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Alive bool   `json:"alive"`
}

// Options configures the server.
type Options struct {
	// Addr is the configured listen address; its host is an accepted Host.
	Addr string
	// Token is the shared server.auth_token ("" for none): it signs in as
	// the first admin (or the implicit owner). With neither Token nor
	// People configured, /ws and /api/* need no credential.
	Token string
	// People is who may sign in (nil: the implicit owner alone).
	People *people.Directory
	// Credentials holds stored tokens, web sessions and login links (nil:
	// an empty store that keeps nothing).
	Credentials *auth.Store
	// Auth is config.yaml's auth: session length, the trusted proxy, OIDC.
	Auth config.Auth
	// AllowedOrigins are extra accepted Origin values (full origins).
	AllowedOrigins []string
	// AllowedHosts are extra accepted Host header names.
	AllowedHosts []string
	// WS serves /ws; Messages serves POST /api/messages (nil: not mounted).
	WS       http.Handler
	Messages http.Handler
	// MCP serves /mcp, the MCP streamable HTTP endpoint (nil: not mounted).
	MCP http.Handler
	// MCPServers, if set, reports the MCP servers the assistant uses, for
	// /api/session and /healthz (as "mcp_servers").
	MCPServers func() any
	// Schedules serves /api/schedules (nil: not mounted).
	Schedules Schedules
	// Cluster, if set (a node of a cluster), reports this node's view of
	// it for /api/session ("cluster") and /healthz ("role").
	Cluster func() ClusterStatus
	// Warnings, if set, lists what an operator should know that does not
	// stop the desk (a damaged schedules.json kept aside): /healthz
	// answers 200 with status "degraded" and them as "reasons". Called on
	// each request from the request's goroutine.
	Warnings func() []string
	// Doors, if set, lists the chat doors that run on this node and how
	// they are (GET /api/session's doors).
	Doors func() []DoorStatus
	// Attachments serves POST /api/attachments and GET
	// /api/attachments/{sha256} (nil: not mounted). AttachmentMaxBytes
	// caps an upload: attachments.max_bytes, default
	// DefaultAttachmentMaxBytes; give the store the same limit.
	Attachments        AttachmentStore
	AttachmentMaxBytes int64
	// Registry gets the server's metrics; nil makes a private one.
	Registry *prometheus.Registry

	// Audit records sign-ins and revoked sessions as person_changed
	// events (hub.SessionManager.RecordPersonChange); nil: not recorded.
	Audit Audit
	// OIDCClientSecret is the value of the variable auth.oidc.client_secret_env
	// names; "" for a public client (PKCE alone).
	OIDCClientSecret string
}

// Handler returns the root handler.
func Handler(s Session, o Options) http.Handler {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newSessionCollector(s))

	g := newGuard(o)
	h := &apiHandlers{s: s, o: o, g: g}
	api := http.NewServeMux()
	g.meRoutes(api)
	api.Handle("GET /ws", o.WS)
	if o.Messages != nil {
		api.Handle("/api/messages", o.Messages)
	}
	if o.Attachments != nil {
		attachmentRoutes(api, o)
	}
	api.Handle("POST /api/cancel", apiFunc(h.cancel))
	api.Handle("POST /api/reset", apiFunc(h.reset))
	api.Handle("POST /api/approvals/{id}", apiFunc(h.decide))
	api.Handle("GET /api/history/recent", apiFunc(h.recent))
	api.Handle("GET /api/history/range", apiFunc(h.historyRange))
	api.Handle("GET /api/history/search", apiFunc(h.search))
	api.Handle("DELETE /api/history/{seq}", apiFunc(h.erase))
	api.Handle("GET /api/session", apiFunc(h.session))
	if o.Schedules != nil {
		scheduleRoutes(api, o.Schedules, o.People)
	}
	memoryRoutes(api, h)
	api.Handle("/api/", apiFunc(notFound))

	mux := http.NewServeMux()
	ui, _ := fs.Sub(static, "static")
	mux.Handle("/", securityHeaders(http.FileServerFS(ui)))
	mux.Handle("GET /healthz", apiFunc(h.health))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if l := newOIDCLogin(o); l != nil {
		l.routes(mux)
	}
	g.authRoutes(mux)
	mux.Handle("/ws", g.protect(api))
	mux.Handle("/api/", g.protect(api))
	if o.MCP != nil {
		mux.Handle("/mcp", g.protect(o.MCP))
	}
	return g.checkHost(mux)
}

// mcpServers is the MCP servers' states, or nil.
func mcpServers(o Options) any {
	if o.MCPServers == nil {
		return nil
	}
	return o.MCPServers()
}

// maxHistoryEvents caps one page of /api/history/recent and /range.
const maxHistoryEvents = 1000

// historyPage is the body of /api/history/recent and /range.
type historyPage struct {
	Events    []event.Event `json:"events"`
	Truncated bool          `json:"truncated"`
}

func nonNil(evs []event.Event) []event.Event {
	if evs == nil {
		return []event.Event{}
	}
	return evs
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, httpjson.Errorf(http.StatusBadRequest, "bad_"+name, fmt.Sprintf("%s must be a number from %d to %d", name, lo, hi))
	}
	return n, nil
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpjson.WriteError(w, httpjson.Errorf(http.StatusMethodNotAllowed, "method_not_allowed", "the UI is read-only; use GET"))
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// DoorStatus is a chat door's state in GET /api/session: Error says why
// it is unhealthy (the platform refuses the token, answers 429 or not at
// all); Running is false on a cluster node that does not hold the lease
// (the door runs on the holder).
type DoorStatus struct {
	Door    string `json:"door"`
	Running bool   `json:"running"`
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}
