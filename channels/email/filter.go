package email

import (
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"
)

// Reasons a mail is marked seen without an answer (Metrics.Skipped keys).
const (
	SkipOwnAddress     = "own-address"     // from the assistant itself
	SkipNullSender     = "null-sender"     // Return-Path <>: a bounce or notification
	SkipMailerDaemon   = "mailer-daemon"   // MAILER-DAEMON or postmaster
	SkipAutoSubmitted  = "auto-submitted"  // Auto-Submitted other than "no", X-Autoreply, X-Autorespond
	SkipPrecedence     = "precedence"      // Precedence: bulk, list, junk or auto_reply
	SkipList           = "list"            // any List-* header
	SkipBadFrom        = "bad-from"        // no single parsable From address
	SkipNoReturnPath   = "no-return-path"  // the envelope sender is unknown
	SkipSenderMismatch = "sender-mismatch" // From and envelope sender differ
	SkipNotAllowed     = "not-allowed"     // not on allow_from, nor a person's address
	SkipForbidden      = "forbidden"       // a person's address, but the person may not talk
	SkipTooLarge       = "too-large"       // over max_bytes
	SkipDuplicate      = "duplicate"       // the same Message-ID was handled before
	SkipRateLimited    = "rate-limited"    // over rate_per_hour for this sender
	SkipEmpty          = "empty"           // neither subject nor text
	SkipUnreadable     = "unreadable"      // not even the header could be parsed
	SkipBeforeStart    = "before-start"    // rescan: mail older than the first start, or already \Seen
)

// allowList matches senders against allow_from.
type allowList struct {
	addrs   map[string]bool
	domains map[string]bool
}

func parseAllowList(entries []string) (allowList, error) {
	a := allowList{addrs: map[string]bool{}, domains: map[string]bool{}}
	if len(entries) == 0 {
		return a, fmt.Errorf("allow_from is empty: nobody would get an answer")
	}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if d, ok := strings.CutPrefix(e, "@"); ok && d != "" && !strings.Contains(d, "@") {
			a.domains[d] = true
			continue
		}
		if addr, err := mail.ParseAddress(e); err == nil && addr.Address == e {
			a.addrs[e] = true
			continue
		}
		return a, fmt.Errorf("allow_from entry %q is neither an address nor @domain", e)
	}
	return a, nil
}

// allowed reports whether addr (lowercased) is on the list.
func (a allowList) allowed(addr string) bool {
	if a.addrs[addr] {
		return true
	}
	at := strings.LastIndexByte(addr, '@')
	return at >= 0 && a.domains[addr[at+1:]]
}

func localPart(addr string) string {
	if at := strings.LastIndexByte(addr, '@'); at >= 0 {
		return addr[:at]
	}
	return addr
}

// screen decides whether m may be answered. It returns "" to answer, or
// the Skip* reason. Automated mail is refused before the allowlist is
// even looked at: an allowed sender's out-of-office reply must not loop.
func (c *Channel) screen(m *mailMsg) string {
	h := m.Header
	switch {
	case m.From == c.self || m.ReturnPath == c.self:
		return SkipOwnAddress
	case m.HasReturnPath && m.ReturnPath == "":
		return SkipNullSender
	case isDaemon(m.From) || isDaemon(m.ReturnPath):
		return SkipMailerDaemon
	}
	if v := h.Get("Auto-Submitted"); v != "" {
		kind, _, _ := strings.Cut(v, ";")
		if !strings.EqualFold(strings.TrimSpace(kind), "no") {
			return SkipAutoSubmitted
		}
	}
	if h.Has("X-Autoreply") || h.Has("X-Autorespond") {
		return SkipAutoSubmitted
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "list", "junk", "auto_reply":
		return SkipPrecedence
	}
	for f := h.Fields(); f.Next(); {
		if strings.HasPrefix(strings.ToLower(f.Key()), "list-") {
			return SkipList
		}
	}
	switch {
	case m.From == "":
		return SkipBadFrom
	case !m.HasReturnPath:
		return SkipNoReturnPath
	case m.ReturnPath != m.From:
		return SkipSenderMismatch
	}
	person, talks := c.person(m.From)
	switch {
	case person != "" && !talks:
		return SkipForbidden
	case person == "" && !c.allow.allowed(m.From):
		return SkipNotAllowed
	case m.Subject == "" && m.Text == "":
		return SkipEmpty
	}
	return ""
}

func isDaemon(addr string) bool {
	switch localPart(addr) {
	case "mailer-daemon", "postmaster":
		return true
	}
	return false
}

// rateLimiter allows at most n events per key in any window. It is used
// only by the receiver goroutine, but locks so that tests may poke it.
type rateLimiter struct {
	mu     sync.Mutex
	n      int
	window time.Duration
	seen   map[string][]time.Time
}

func newRateLimiter(n int, window time.Duration) *rateLimiter {
	return &rateLimiter{n: n, window: window, seen: map[string][]time.Time{}}
}

// allow records an event for key at now if the key is under its limit.
func (r *rateLimiter) allow(key string, now time.Time) bool {
	if r.n <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, ts := range r.seen { // prune, so the map stays small
		i := 0
		for i < len(ts) && now.Sub(ts[i]) >= r.window {
			i++
		}
		if i == len(ts) {
			delete(r.seen, k)
		} else {
			r.seen[k] = ts[i:]
		}
	}
	if len(r.seen[key]) >= r.n {
		return false
	}
	r.seen[key] = append(r.seen[key], now)
	return true
}

// person is Options.People for addr ("", false without it).
func (c *Channel) person(addr string) (string, bool) {
	if c.opts.People == nil {
		return "", false
	}
	return c.opts.People(addr)
}
