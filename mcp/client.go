package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// ServerConfig is one MCP server the assistant uses (config mcp.servers).
type ServerConfig struct {
	// Name prefixes its tools: the model sees <name>__<tool>.
	Name string
	// Command and Args start a stdio server, in a process group of its own,
	// with Env as its whole environment. Either Command or URL is set.
	Command string
	Args    []string
	Env     []string
	// URL reaches a streamable HTTP server; Headers go with every request.
	URL     string
	Headers map[string]string
	// Tools, if not empty, is the allowlist of tool names offered.
	Tools []string
	// Confirm globs name the tools whose calls need approval.
	Confirm []string
	// Timeout bounds one tool call. Default 60 s.
	Timeout time.Duration
}

// ServerState is how a server is doing, for /api/session and /healthz.
type ServerState struct {
	Name  string   `json:"name"`
	State string   `json:"state"` // starting, ready, failed, stopped
	Error string   `json:"error,omitempty"`
	Tools []string `json:"tools"`
	// Skipped lists tools the server offers that the model is not given,
	// and why (at most 20; SkippedCount counts them all).
	Skipped      []SkippedTool `json:"skipped,omitempty"`
	SkippedCount int           `json:"skipped_count,omitempty"`
	// Restarts counts the sessions that ended since frontdesk started
	// (a crash, a hang, a lost connection).
	Restarts int `json:"restarts"`
}

// Manager keeps one connection per configured MCP server: it starts them,
// lists their tools (again on notifications/tools/list_changed), restarts
// a server that fails or dies with backoff, and hands the ready servers'
// tools to each turn. A failing server only loses its tools: the session
// never stops because of it. Run owns the connections; Tools and States
// may be called from any goroutine.
type Manager struct {
	// MaxTools is mcp.max_tools: the most tools one request may carry, of
	// which Builtin are frontdesk's own (history, schedules); Tools hands
	// out the rest in the servers' order. Set both before Run. Default
	// DefaultMaxTools and 0.
	MaxTools, Builtin int
	// StopGrace is how long a stdio server gets to exit after its stdin
	// closes, and again after SIGTERM, before it is killed. Default
	// DefaultStopGrace.
	StopGrace time.Duration

	clients []*client
	logger  *slog.Logger
	version string

	mu           sync.Mutex // guards lastOverflow
	lastOverflow string     // the tools last logged as over MaxTools
}

// NewManager returns a Manager for servers; Run starts them.
func NewManager(version string, servers []ServerConfig, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{logger: logger, version: version}
	for _, s := range servers {
		if s.Timeout <= 0 {
			s.Timeout = 60 * time.Second
		}
		m.clients = append(m.clients, &client{cfg: s, m: m, state: "starting", restart: make(chan struct{}, 1)})
	}
	return m
}

// Run connects every server and keeps it connected until ctx ends, then
// closes them all (a stdio server's process group is killed if it does
// not exit when its stdin closes).
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range m.clients {
		wg.Go(func() { c.supervise(ctx) })
	}
	wg.Wait()
}

// Tools returns the tools of the servers that are ready now, named
// <server>__<tool>, at most MaxTools-Builtin of them. The ones over it are
// logged once (again only when they change) and listed in States.
func (m *Manager) Tools() []agent.Tool {
	var out, over []agent.Tool
	left := m.maxTools() - m.Builtin
	for _, c := range m.clients {
		tools := c.agentTools()
		n := min(len(tools), max(left, 0))
		left -= n
		out, over = append(out, tools[:n]...), append(over, tools[n:]...)
	}
	m.logOverflow(over)
	return out
}

// maxTools is MaxTools or its default.
func (m *Manager) maxTools() int {
	if m.MaxTools > 0 {
		return m.MaxTools
	}
	return DefaultMaxTools
}

// logOverflow logs the tools over MaxTools when they differ from the last
// ones logged.
func (m *Manager) logOverflow(over []agent.Tool) {
	names := make([]string, len(over))
	for i, t := range over {
		names[i] = t.Name
	}
	key := strings.Join(names, ",")
	m.mu.Lock()
	changed := key != m.lastOverflow
	m.lastOverflow = key
	m.mu.Unlock()
	if changed && len(over) > 0 {
		m.logger.Warn("mcp tools over mcp.max_tools are left out of every request", "max_tools", m.maxTools(), "count", len(over),
			"tools", strings.Join(names[:min(len(names), 10)], ", "))
	}
}

// States reports every server's state.
func (m *Manager) States() []ServerState {
	out := make([]ServerState, 0, len(m.clients))
	left := m.maxTools() - m.Builtin
	for _, c := range m.clients {
		c.mu.Lock()
		st := ServerState{Name: c.cfg.Name, State: c.state, Error: c.err, Tools: []string{}, Restarts: c.restarts}
		skipped := slices.Clone(c.skipped)
		n := len(c.tools)
		if c.session != nil {
			n = min(n, max(left, 0))
			left -= n
		}
		for i, t := range c.tools {
			if i < n {
				st.Tools = append(st.Tools, t.Name)
			} else {
				skipped = append(skipped, SkippedTool{Name: t.Name, Reason: fmt.Sprintf(reasonMaxTools, m.maxTools())})
			}
		}
		c.mu.Unlock()
		st.SkippedCount = len(skipped)
		st.Skipped = skipped[:min(len(skipped), maxSkippedListed)]
		out = append(out, st)
	}
	return out
}

// Check connects to each server once, lists its tools and disconnects:
// `frontdesk check-config`. It returns one line per server.
func (m *Manager) Check(ctx context.Context) ([]string, error) {
	var lines []string
	var errs []error
	for _, c := range m.clients {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cs, p, err := c.connect(cctx)
		if err == nil {
			var tools []*sdk.Tool
			tools, err = listTools(cctx, cs)
			c.stop(cs, p)
			p.kill()
			if err == nil {
				var names []string
				kept, _ := c.offer(tools)
				for _, t := range kept {
					names = append(names, t.Name)
				}
				lines = append(lines, fmt.Sprintf("mcp server %s: reachable, tools: %s", c.cfg.Name, strings.Join(names, ", ")))
			}
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s: %w", c.cfg.Name, err))
		}
	}
	return lines, errors.Join(errs...)
}

// client is one server's connection.
type client struct {
	cfg     ServerConfig
	m       *Manager
	restart chan struct{} // a call found the server hung: reconnect

	mu       sync.Mutex // guards the fields below
	session  *sdk.ClientSession
	tools    []*sdk.Tool
	skipped  []SkippedTool // offered, but with names a backend refuses
	state    string
	err      string
	restarts int
}

// Backoff between restarts of a failing server.
const (
	minBackoff = time.Second
	maxBackoff = 2 * time.Minute
)

// supervise connects, waits for the session to end, and reconnects with
// backoff, until ctx ends.
func (c *client) supervise(ctx context.Context) {
	backoff := minBackoff
	logged := false
	for {
		cs, p, err := c.connect(ctx)
		var tools []*sdk.Tool
		if err == nil {
			tools, err = listTools(ctx, cs)
			if err != nil {
				c.stop(cs, p)
				p.kill()
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.set(nil, nil, "failed", err.Error())
			if !logged { // once per outage, not once per retry
				c.m.logger.Error("mcp server failed; its tools are left out until it is back", "server", c.cfg.Name, "err", err, "retry_in", backoff)
				logged = true
			}
			if !ctxsleep.Sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		if logged {
			c.m.logger.Info("mcp server is back", "server", c.cfg.Name)
		}
		logged, backoff = false, minBackoff
		kept, skipped := c.offer(tools)
		c.set(cs, kept, "ready", "")
		c.setSkipped(skipped)
		c.m.logger.Info("mcp server ready", "server", c.cfg.Name, "tools", len(kept))
		c.logSkipped(skipped)
		ended := make(chan error, 1)
		go func() { ended <- cs.Wait() }()
		select {
		case <-ctx.Done():
			c.stop(cs, p)
			p.kill() // what is left of the group
			c.set(nil, nil, "stopped", "")
			return
		case err := <-ended:
			p.kill()
			msg := "the connection ended"
			if err != nil {
				msg = err.Error()
			}
			c.set(nil, nil, "failed", msg)
			c.ended()
			c.m.logger.Error("mcp server stopped; restarting", "server", c.cfg.Name, "err", msg)
			logged = true
		case <-c.restart:
			p.kill() // first: a hung (or stopped) process would hold Close for seconds
			cs.Close()
			c.set(nil, nil, "failed", "a cancelled call did not stop")
			c.ended()
			c.m.logger.Warn("mcp server did not stop a cancelled call; restarting it", "server", c.cfg.Name)
			logged = true
		}
		if !ctxsleep.Sleep(ctx, minBackoff) {
			return
		}
	}
}

// ended counts a session that ended.
func (c *client) ended() {
	c.mu.Lock()
	c.restarts++
	c.mu.Unlock()
}

func (c *client) set(cs *sdk.ClientSession, tools []*sdk.Tool, state, err string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session, c.tools, c.state, c.err = cs, tools, state, err
}

// connect starts or dials the server. p is a stdio server's process
// group (nil for HTTP; its methods are no-ops then).
func (c *client) connect(ctx context.Context) (cs *sdk.ClientSession, p *proc, err error) {
	opts := &sdk.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *sdk.ToolListChangedRequest) { c.refresh(ctx, req.Session) },
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "frontdesk", Version: c.m.version}, opts)
	if c.cfg.URL != "" {
		tr := &sdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: &http.Client{Transport: headers{c.cfg.Headers}}}
		cs, err := cl.Connect(ctx, tr, nil)
		return cs, nil, err
	}
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Env = c.cfg.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = &stderrLog{logger: c.m.logger, server: c.cfg.Name}
	// A process that left the group can hold stderr open: Wait gives up on
	// the pipe this long after the server exited.
	cmd.WaitDelay = 500 * time.Millisecond
	p = &proc{cmd: cmd}
	// The SDK's own TERM and KILL come after stop's (2 × StopGrace).
	cs, err = cl.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		p.kill()
		if cmd.Process != nil {
			_ = cmd.Wait()
		}
		return nil, nil, fmt.Errorf("start %s: %w", c.cfg.Command, err)
	}
	return cs, p, nil
}

// refresh lists the tools again after notifications/tools/list_changed.
func (c *client) refresh(ctx context.Context, cs *sdk.ClientSession) {
	tools, err := listTools(ctx, cs)
	if err != nil {
		c.m.logger.Warn("mcp server's new tool list could not be read", "server", c.cfg.Name, "err", err)
		return
	}
	kept, skipped := c.offer(tools)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == cs {
		c.tools, c.skipped = kept, skipped
	}
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

func (c *client) setSkipped(skipped []SkippedTool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skipped = skipped
}

// ToolSeparator joins a server's name and its tool's: files__read_file.
const ToolSeparator = "__"

// agentTools returns the server's tools as the agent sees them.
func (c *client) agentTools() []agent.Tool {
	c.mu.Lock()
	cs, tools := c.session, c.tools
	c.mu.Unlock()
	if cs == nil {
		return nil // not ready: its tools are left out of this turn
	}
	out := make([]agent.Tool, 0, len(tools))
	for _, t := range tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		name := t.Name
		out = append(out, agent.Tool{
			Name:        c.cfg.Name + ToolSeparator + name,
			Server:      c.cfg.Name,
			Confirm:     slices.ContainsFunc(c.cfg.Confirm, func(g string) bool { ok, _ := path.Match(g, name); return ok }),
			Description: t.Description,
			Parameters:  schema,
			Call:        func(ctx context.Context, args json.RawMessage) (string, error) { return c.call(ctx, name, args) },
		})
	}
	return out
}

// call runs one tool call within the server's timeout. On cancel the SDK
// tells the server (notifications/cancelled) and returns at once; if the
// server then does not answer a ping within a second, it is hung on the
// call and is restarted.
func (c *client) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	// The session of now: a server restarted during the turn still serves
	// the tools it listed for it.
	c.mu.Lock()
	cs, state := c.session, c.state
	c.mu.Unlock()
	if cs == nil {
		return "", fmt.Errorf("mcp server %s is not available (%s); try again later", c.cfg.Name, state)
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if cctx.Err() != nil {
			go c.checkAlive(cs)
			if ctx.Err() == nil {
				return "", fmt.Errorf("the tool %s did not answer within %s", name, c.cfg.Timeout)
			}
			return "", ctx.Err()
		}
		return "", fmt.Errorf("mcp server %s: %w", c.cfg.Name, err)
	}
	text := resultText(res)
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// checkAlive restarts the server if it no longer answers after a call was
// abandoned.
func (c *client) checkAlive(cs *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		select {
		case c.restart <- struct{}{}:
		default:
		}
	}
}

// resultText flattens a tool result to text: text parts as they are,
// images and other parts summarised (the model gets text only, for now).
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %s]", v.Resource.URI, v.Resource.MIMEType))
			}
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", v.Name, v.URI))
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// headers adds fixed headers to every request.
type headers struct{ h map[string]string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// stderrLog logs what a stdio server writes to stderr, a line at a time.
type stderrLog struct {
	logger *slog.Logger
	server string
	buf    []byte
}

func (s *stderrLog) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := strings.IndexByte(string(s.buf), '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(s.buf[:i])); line != "" {
			s.logger.Debug("mcp server stderr", "server", s.server, "line", line)
		}
		s.buf = s.buf[i+1:]
	}
	if len(s.buf) > 64<<10 {
		s.buf = s.buf[:0]
	}
	return len(p), nil
}
