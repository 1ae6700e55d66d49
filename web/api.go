package web

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
)

// apiFunc is an API handler that returns its error instead of writing it:
// ServeHTTP writes it in the one way every endpoint shares (the session's
// errors mapped by httpjson.FromSession, anything else a logged 500).
type apiFunc func(w http.ResponseWriter, r *http.Request) error

func (f apiFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		httpjson.WriteError(w, httpjson.FromSession(err))
	}
}

// apiHandlers are the JSON endpoints of /api and /healthz.
type apiHandlers struct {
	s Session
	o Options
	g *guard // who is asking (the detail of /healthz)
}

func (h *apiHandlers) cancel(w http.ResponseWriter, r *http.Request) error {
	ok, err := h.s.CancelBy(r.Context(), actor(r, hub.CancelByAPI))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, map[string]bool{"cancelled": ok})
	return nil
}

func (h *apiHandlers) reset(w http.ResponseWriter, r *http.Request) error {
	d, err := h.s.Reset(r.Context(), hub.ResetManual, actor(r, hub.CancelByAPI))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, d)
	return nil
}

func (h *apiHandlers) decide(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Decision string `json:"decision"`
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err == nil {
		err = strictjson.Unmarshal(b, &body)
	}
	if err != nil {
		return httpjson.Errorf(http.StatusBadRequest, "bad_json", `send {"decision":"approve"} or {"decision":"deny"}: `+err.Error())
	}
	d, err := h.s.Decide(r.Context(), r.PathValue("id"), body.Decision, actor(r, hub.CancelByAPI))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, d)
	return nil
}

func (h *apiHandlers) recent(w http.ResponseWriter, r *http.Request) error {
	n, err := intParam(r, "n", 20, 1, maxHistoryEvents)
	if err != nil {
		return err
	}
	evs, err := h.s.Recent(r.Context(), n)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, historyPage{Events: nonNil(evs)})
	return nil
}

func (h *apiHandlers) historyRange(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", maxHistoryEvents, 1, maxHistoryEvents)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	evs, truncated, err := h.s.Range(r.Context(), q.Get("from"), q.Get("to"), limit)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, historyPage{Events: nonNil(evs), Truncated: truncated})
	return nil
}

// erase is DELETE /api/history/{seq}: the message at seq is erased
// (hub.Erase); 200 {"seq","erased":true}.
func (h *apiHandlers) erase(w http.ResponseWriter, r *http.Request) error {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq <= 0 {
		return httpjson.Errorf(http.StatusBadRequest, "bad_seq", "seq must be a whole number ≥ 1, the seq of a user or assistant message: DELETE /api/history/42")
	}
	d, err := h.s.Erase(r.Context(), seq, actor(r, memoryDoor(r))) // "web" from the page, "api" otherwise
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"seq": d.Seq, "erased": true})
	return nil
}

func (h *apiHandlers) search(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 20, 1, 200)
	if err != nil {
		return err
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		return httpjson.Errorf(http.StatusBadRequest, "bad_query", "q must not be empty")
	}
	res, err := h.s.Search(r.Context(), q, limit)
	if err != nil {
		return err
	}
	if res.Hits == nil {
		res.Hits = []hub.Hit{}
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

func (h *apiHandlers) session(w http.ResponseWriter, r *http.Request) error {
	info, err := h.s.Info(r.Context())
	if err != nil {
		return err
	}
	var cl *ClusterStatus
	if h.o.Cluster != nil {
		c := h.o.Cluster()
		cl = &c
	}
	var doors []DoorStatus
	if h.o.Doors != nil {
		doors = h.o.Doors()
	}
	httpjson.Write(w, http.StatusOK, struct {
		hub.Info
		MCPServers any            `json:"mcp_servers,omitempty"`
		Cluster    *ClusterStatus `json:"cluster,omitempty"`
		Doors      []DoorStatus   `json:"doors,omitempty"`
	}{info, mcpServers(h.o), cl, doors})
	return nil
}

// health is /healthz: 503 while shutting down or while a part of the
// session's storage cannot be written (until a write of it succeeds again);
// 200 "degraded" with reasons while Options.Warnings has some.
//
// It is open, so what it tells everyone is short: the status and, when
// not ok, reasons naming the failing part and what is wrong with it. The
// detail — the storage error's text, the MCP servers with their commands,
// tools and errors — is for those who may read /api/session: it is added
// when the request is signed in as someone who may read, or when no
// credential is configured (then /api/session is as open as /healthz).
func (h *apiHandlers) health(w http.ResponseWriter, r *http.Request) error {
	info, err := h.s.Info(r.Context())
	if err != nil {
		return err
	}
	detail := h.g.mayRead(r)
	status, code := "ok", http.StatusOK
	body := map[string]any{}
	var reasons []string
	if info.Storage != "" {
		status, code = info.Storage, http.StatusServiceUnavailable
		reasons = append(reasons, storageReason(info.Storage, info.StorageError))
		if detail {
			body["message"] = info.StorageError
		}
	}
	if h.o.Cluster != nil {
		c := h.o.Cluster()
		body["role"] = c.Role
		if why := c.cannotRun(); why != "" && status == "ok" {
			status, code = "no_leader", http.StatusServiceUnavailable
			reasons = append(reasons, "cluster: "+why)
		}
	}
	if h.o.Warnings != nil {
		if warn := h.o.Warnings(); len(warn) > 0 {
			// Still 200: the desk works; a health check must not restart it
			// over what a restart does not mend.
			if status == "ok" {
				status = "degraded"
			}
			reasons = append(reasons, warn...)
		}
	}
	body["status"] = status
	if len(reasons) > 0 {
		body["reasons"] = reasons
	}
	if servers := mcpServers(h.o); servers != nil && detail {
		body["mcp_servers"] = servers // a failed one costs only its tools: still healthy
	}
	httpjson.Write(w, code, body)
	return nil
}

// storageReason is the short, public form of a storage fault: the part
// that cannot be written ("chat log", the text before the first ": " of
// hub.Info.StorageError) and what is wrong, without the error's text (file
// paths and system detail stay behind the token).
func storageReason(code, msg string) string {
	part, _, _ := strings.Cut(msg, ": ")
	what := "cannot be written"
	if code == hub.StorageFull {
		what = "disk full"
	}
	if part == "" || len(part) > 40 {
		return "storage: " + what
	}
	return part + ": " + what
}

func notFound(w http.ResponseWriter, r *http.Request) error {
	return httpjson.Errorf(http.StatusNotFound, "not_found", "no such API endpoint: "+r.Method+" "+r.URL.Path)
}

// cannotRun says why an input sent to this node cannot be run now, "" when
// it can: this node runs the session, or it follows a holder that is a
// live node of the cluster. A holder's name that is no node, or a node
// that stopped answering, runs nothing, whatever the lease says.
func (c ClusterStatus) cannotRun() string {
	switch {
	case c.Role == "leader":
		return ""
	case c.Leader == "":
		return "no node holds the lease (an election is under way, or too few nodes are up)"
	case c.Leader == c.Node:
		return "this node holds the lease and is taking over"
	}
	for _, n := range c.Nodes {
		if n.Name == c.Leader {
			if !n.Alive {
				return fmt.Sprintf("the lease holder %s is not answering", c.Leader)
			}
			return ""
		}
	}
	return fmt.Sprintf("the lease is held by %q, which is not a node of this cluster", c.Leader)
}
