package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/ratelimit"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// Channel is the door send_message's inputs come through.
const Channel = event.ChannelMCP

// Submitter is the part of the hub send_message uses.
type Submitter interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
}

var _ Submitter = (*hub.SessionManager)(nil)

// SendOptions bounds send_message as the webhook is bounded.
type SendOptions struct {
	// MaxBytes refuses content longer than it: server.max_message_bytes.
	// Default 65536.
	MaxBytes int64
	// RatePerSec and RateBurst limit the calls for the whole process (a
	// token bucket, the webhook's channels.webhook.rate_per_sec and
	// rate_burst); past it the call fails with "rate_limited". RatePerSec
	// 0 means no limit; RateBurst defaults to 20.
	RatePerSec float64
	RateBurst  int
	// Now is the rate limiter's clock. Default time.Now.
	Now func() time.Time
	// Limited counts the calls the rate limit refused; nil counts nothing.
	Limited prometheus.Counter
}

// SendTool returns send_message: it puts content into the shared
// conversation as channel "mcp" — every client sees it and the reply, the
// busy policy applies — and answers with the turn's outcome
// {turn, status, reply, error?}. It waits for the reply as long as the
// caller's request lasts. Content over o.MaxBytes and calls over the rate
// limit are refused with a tool error, before anything reaches the hub.
func SendTool(s Submitter, o SendOptions) agent.Tool {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 65536
	}
	if o.RateBurst <= 0 {
		o.RateBurst = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var mu sync.Mutex
	bucket := ratelimit.New(o.RatePerSec, o.RateBurst)
	take := func() (bool, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		return bucket.Take(o.Now())
	}
	return agent.Tool{
		Name: "send_message",
		Description: "Send a message into the user's shared frontdesk conversation (everyone watching sees it, marked as coming over MCP) " +
			"and return the assistant's reply. Fails with a busy message while the assistant is answering something else, unless the server queues.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","minLength":1,"description":"the message"}},"required":["content"],"additionalProperties":false}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			if ok, retry := take(); !ok {
				if o.Limited != nil {
					o.Limited.Inc()
				}
				secs := int(math.Ceil(retry.Seconds()))
				return "", fmt.Errorf("rate_limited: too many messages: this server takes %d at once, then %g a second; try again in %d s",
					o.RateBurst, o.RatePerSec, secs)
			}
			var p struct {
				Content string `json:"content"`
			}
			if err := strictjson.Unmarshal(args, &p); err != nil {
				return "", fmt.Errorf("invalid arguments: %w", err)
			}
			if int64(len(p.Content)) > o.MaxBytes {
				return "", fmt.Errorf("too_large: the content is %d bytes, more than server.max_message_bytes (%d); nothing was sent", len(p.Content), o.MaxBytes)
			}
			done := make(chan hub.TurnOutcome, 1)
			// The request's person (the guard put them in its context,
			// which the stateless transport hands the call, as the slot).
			who, _ := people.FromContext(ctx)
			a := who.Actor(Channel)
			res, err := s.Submit(ctx, hub.Input{Channel: Channel, Content: p.Content, Done: done, Person: a.Person, SignedIn: a.SignedIn})
			if err != nil {
				return "", err
			}
			if res.Outcome == hub.Rejected {
				return "", errors.New("busy: " + res.Busy.Message)
			}
			releaseSlot(ctx) // only waiting from here on: other /mcp requests may run
			select {
			case out := <-done:
				b, err := json.Marshal(out)
				return string(b), err
			case <-ctx.Done():
				return "", fmt.Errorf("gave up waiting for the reply to turn %s (it goes on): %w", res.Turn, ctx.Err())
			}
		},
	}
}
