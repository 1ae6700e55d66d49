package mcp

import (
	"os/exec"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultStopGrace is Manager.StopGrace: a stdio server is killed at most
// two of these after frontdesk starts stopping it, so shutdown stays within
// its 5 s with servers that ignore both the end of stdin and SIGTERM.
const DefaultStopGrace = time.Second

// proc is a stdio server's process group; nil for an HTTP server.
type proc struct{ cmd *exec.Cmd }

// signal sends sig to the whole group: a server started through npx or a
// shell has children that hold its pipes.
func (p *proc) signal(sig syscall.Signal) {
	if p != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// kill ends the group at once.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

func (m *Manager) stopGrace() time.Duration {
	if m.StopGrace > 0 {
		return m.StopGrace
	}
	return DefaultStopGrace
}

// stop ends a session as MCP's stdio transport asks — close the server's
// stdin, SIGTERM if it has not exited, SIGKILL if it still has not — but
// on frontdesk's clock: one grace for each step, whatever the SDK's own
// waits are. Every server is stopped on its own goroutine (supervise), so
// five deaf servers take as long as one. An HTTP server's close (a DELETE)
// is given one grace, then abandoned.
func (c *client) stop(cs *sdk.ClientSession, p *proc) {
	grace := c.m.stopGrace()
	closed := make(chan struct{})
	go func() { defer close(closed); _ = cs.Close() }()
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, 0} {
		select {
		case <-closed:
			return
		case <-t.C:
		}
		if p == nil || sig == 0 {
			c.m.logger.Warn("mcp server did not close in time; going on without it", "server", c.cfg.Name)
			return
		}
		p.signal(sig)
		t.Reset(grace)
	}
}
