// Package web is the HTTP server: the embedded chat UI, /ws, the JSON API,
// /healthz and /metrics, behind the Host, Origin and token checks.
package web

import (
	"context"
	"crypto/subtle"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
)

//go:embed static
var static embed.FS

// Session is the part of the hub the API uses.
type Session interface {
	Info(ctx context.Context) (hub.Info, error)
	Cancel(ctx context.Context) (bool, error)
	Reset(ctx context.Context, reason string) (event.ResetData, error)
	Decide(ctx context.Context, id, decision, by string) (event.ApprovalResultData, error)
	Recent(ctx context.Context, n int) ([]event.Event, error)
	Range(ctx context.Context, from, to string, limit int) ([]event.Event, bool, error)
	Search(ctx context.Context, query string, limit int) (hub.SearchResult, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Options configures the server.
type Options struct {
	// Addr is the configured listen address; its host is an accepted Host.
	Addr string
	// Token, when non-empty, is required on /ws and /api/*.
	Token string
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
	// Registry gets the server's metrics; nil makes a private one.
	Registry *prometheus.Registry
}

// Handler returns the root handler.
func Handler(s Session, o Options) http.Handler {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newSessionCollector(s))

	api := http.NewServeMux()
	api.Handle("GET /ws", o.WS)
	if o.Messages != nil {
		api.Handle("/api/messages", o.Messages)
	}
	api.HandleFunc("POST /api/cancel", func(w http.ResponseWriter, r *http.Request) {
		ok, err := s.Cancel(r.Context())
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]bool{"cancelled": ok})
	})
	api.HandleFunc("POST /api/reset", func(w http.ResponseWriter, r *http.Request) {
		d, err := s.Reset(r.Context(), hub.ResetManual)
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, d)
	})
	api.HandleFunc("POST /api/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Decision string `json:"decision"`
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		if err == nil {
			err = strictjson.Unmarshal(b, &body)
		}
		if err != nil {
			httpjson.WriteError(w, httpjson.Errorf(http.StatusBadRequest, "bad_json", `send {"decision":"approve"} or {"decision":"deny"}: `+err.Error()))
			return
		}
		d, err := s.Decide(r.Context(), r.PathValue("id"), body.Decision, "api")
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, d)
	})
	api.HandleFunc("GET /api/history/recent", func(w http.ResponseWriter, r *http.Request) {
		n, err := intParam(r, "n", 20, 1, maxHistoryEvents)
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		evs, err := s.Recent(r.Context(), n)
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, historyPage{Events: nonNil(evs)})
	})
	api.HandleFunc("GET /api/history/range", func(w http.ResponseWriter, r *http.Request) {
		limit, err := intParam(r, "limit", maxHistoryEvents, 1, maxHistoryEvents)
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		q := r.URL.Query()
		evs, truncated, err := s.Range(r.Context(), q.Get("from"), q.Get("to"), limit)
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, historyPage{Events: nonNil(evs), Truncated: truncated})
	})
	api.HandleFunc("GET /api/history/search", func(w http.ResponseWriter, r *http.Request) {
		limit, err := intParam(r, "limit", 20, 1, 200)
		if err != nil {
			httpjson.WriteError(w, err)
			return
		}
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		if q == "" {
			httpjson.WriteError(w, httpjson.Errorf(http.StatusBadRequest, "bad_query", "q must not be empty"))
			return
		}
		res, err := s.Search(r.Context(), q, limit)
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		if res.Hits == nil {
			res.Hits = []hub.Hit{}
		}
		httpjson.Write(w, http.StatusOK, res)
	})
	api.HandleFunc("GET /api/session", func(w http.ResponseWriter, r *http.Request) {
		info, err := s.Info(r.Context())
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		httpjson.Write(w, http.StatusOK, struct {
			hub.Info
			MCPServers any `json:"mcp_servers,omitempty"`
		}{info, mcpServers(o)})
	})
	if o.Schedules != nil {
		scheduleRoutes(api, o.Schedules)
	}
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		httpjson.WriteError(w, httpjson.Errorf(http.StatusNotFound, "not_found", "no such API endpoint: "+r.Method+" "+r.URL.Path))
	})

	mux := http.NewServeMux()
	ui, _ := fs.Sub(static, "static")
	mux.Handle("/", securityHeaders(http.FileServerFS(ui)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		info, err := s.Info(r.Context())
		if err != nil {
			httpjson.WriteError(w, httpjson.FromSession(err))
			return
		}
		if info.Storage != "" {
			// Until a write of the failing part succeeds again.
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"status": info.Storage, "message": info.StorageError})
			return
		}
		body := map[string]any{"status": "ok"}
		if servers := mcpServers(o); servers != nil {
			body["mcp_servers"] = servers // a failed one costs only its tools: still healthy
		}
		httpjson.Write(w, http.StatusOK, body)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	g := &guard{o: o}
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

// guard applies the security defaults of DESIGN.md.
type guard struct{ o Options }

// checkHost refuses Host headers that are not ours: a browser tricked by
// DNS rebinding sends the attacker's name, and same-origin checks alone
// would pass because the page's origin is that name too.
func (g *guard) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusMisdirectedRequest, "bad_host",
				"host "+r.Host+" is not served here; add it to server.allowed_hosts"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (g *guard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	listen, _, _ := net.SplitHostPort(g.o.Addr)
	if strings.EqualFold(strings.Trim(listen, "[]"), host) {
		return true
	}
	for _, h := range g.o.AllowedHosts {
		if strings.EqualFold(h, host) || strings.EqualFold(h, hostport) {
			return true
		}
	}
	// Listening on every interface we cannot know our names; the required
	// token (enforced at start-up for non-loopback addresses) protects /ws
	// and /api/* instead, and a rebinding page never has it.
	if ip := net.ParseIP(strings.Trim(listen, "[]")); (listen == "" || (ip != nil && ip.IsUnspecified())) && g.o.Token != "" {
		return true
	}
	return false
}

// protect checks Origin and the token for /ws and /api/*.
func (g *guard) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r.Host) {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusForbidden, "bad_origin",
				"origin "+origin+" is not allowed; add it to server.allowed_origins"))
			return
		}
		if g.o.Token != "" && !tokenOK(r, g.o.Token) {
			refuse(w)
			w.Header().Set("WWW-Authenticate", `Bearer realm="frontdesk"`)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusUnauthorized, "unauthorized",
				"a valid token is required: send Authorization: Bearer <token> or ?token=<token>"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse marks a response that turns a request away unread: the
// connection closes after it, and nothing more is read from it. net/http
// would otherwise drain the rest of the body first (Connection: close alone
// does not stop that), and a client sending it one byte at a time could
// hold a refused connection for as long as the body deadline allows.
func refuse(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func (g *guard) originAllowed(origin, host string) bool {
	for _, o := range g.o.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	// Same origin: the page was served by this Host (which checkHost vetted).
	// The scheme is not compared so a TLS-terminating proxy in front works.
	return strings.EqualFold(u.Host, host)
}

// tokenOK reports whether r carries the token: in an Authorization header
// with the Bearer scheme (in any case, as RFC 7235 has it), or else in the
// token query parameter.
func tokenOK(r *http.Request, want string) bool {
	got := ""
	if scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		got = strings.TrimLeft(cred, " ")
	} else {
		got = r.URL.Query().Get("token")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sessionCollector reports the session's state, asking the hub once per scrape.
type sessionCollector struct {
	s                       Session
	subs, lastSeq, busy, up *prometheus.Desc
	storageOK               *prometheus.Desc
	turns, resets, slow     *prometheus.Desc
	rejected                *prometheus.Desc
}

func newSessionCollector(s Session) *sessionCollector {
	return &sessionCollector{
		s:       s,
		subs:    prometheus.NewDesc("frontdesk_subscribers", "Clients subscribed to the session stream.", nil, nil),
		lastSeq: prometheus.NewDesc("frontdesk_last_seq", "Sequence number of the newest event.", nil, nil),
		busy:    prometheus.NewDesc("frontdesk_busy", "1 while a turn is running.", nil, nil),
		up:      prometheus.NewDesc("frontdesk_session_up", "1 while the session hub answers.", nil, nil),
		storageOK: prometheus.NewDesc("frontdesk_storage_ok", "1 while the session's writes succeed; 0 from a failed write of the chat log "+
			"or a memory file until that part is written again (/healthz says what failed).", nil, nil),
		turns:    prometheus.NewDesc("frontdesk_turns_total", "Turns ended, by turn_end status.", []string{"status"}, nil),
		resets:   prometheus.NewDesc("frontdesk_resets_total", "Resets, by reason.", []string{"reason"}, nil),
		slow:     prometheus.NewDesc("frontdesk_slow_consumers_dropped_total", "Clients dropped for falling too far behind.", nil, nil),
		rejected: prometheus.NewDesc("frontdesk_inputs_rejected_busy_total", "Inputs answered busy (busy_policy reject).", nil, nil),
	}
}

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.subs
	ch <- c.lastSeq
	ch <- c.busy
	ch <- c.up
	ch <- c.storageOK
	ch <- c.turns
	ch <- c.resets
	ch <- c.slow
	ch <- c.rejected
}

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	info, err := c.s.Info(context.Background())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	busy := 0.0
	if info.Busy {
		busy = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.subs, prometheus.GaugeValue, float64(info.Subscribers))
	ch <- prometheus.MustNewConstMetric(c.lastSeq, prometheus.GaugeValue, float64(info.LastSeq))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, busy)
	storageOK := 1.0
	if info.Storage != "" {
		storageOK = 0
	}
	ch <- prometheus.MustNewConstMetric(c.storageOK, prometheus.GaugeValue, storageOK)
	for status, n := range info.Counters.Turns {
		ch <- prometheus.MustNewConstMetric(c.turns, prometheus.CounterValue, float64(n), status)
	}
	for reason, n := range info.Counters.Resets {
		ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(c.slow, prometheus.CounterValue, float64(info.Counters.SlowConsumers))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(info.Counters.Rejected))
}
