// Package ctxsleep waits a while unless a context ends first: the one
// backoff sleep of every retry loop (the email channel, the MCP client,
// the openai backend).
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it reports whether ctx is still live
// (false: stop retrying).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
