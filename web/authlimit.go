package web

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/ratelimit"
)

// Sign-in limits. Per client address, failures only (a bad token, a
// stale cookie, a used login link, a proxy header naming nobody): 20 at
// once, then one every 3 s. Per person, sign-ins (new sessions) and the
// failures that name them: 10 at once, then one every 6 s — a leaked token
// cannot mint sessions in bulk. While a key is over its limit every
// attempt from it is 429, a good credential too: a guesser learns nothing.
const (
	addrBurst, addrRate     = 20, 1.0 / 3
	personBurst, personRate = 10, 1.0 / 6
	maxLimitKeys            = 10000
)

// signinLimits counts failed sign-ins per address and sign-ins per
// person. Safe for concurrent use (every request's goroutine).
type signinLimits struct {
	mu   sync.Mutex
	keys map[string]*limitEntry
}

type limitEntry struct {
	b     *ratelimit.Bucket
	until time.Time // refused until then
	last  time.Time
}

func newSigninLimits() *signinLimits { return &signinLimits{keys: map[string]*limitEntry{}} }

func addrKey(addr string) string     { return "a " + addr }
func personKey(person string) string { return "p " + person }

// check is a 429 while addr is over its limit, else nil.
func (l *signinLimits) check(addr string, now time.Time) error {
	return l.checkKey(addrKey(addr), now)
}

func (l *signinLimits) checkKey(key string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.keys[key]; e != nil && now.Before(e.until) {
		return tooMany(e.until.Sub(now))
	}
	return nil
}

// fail counts a failed sign-in against addr and, if named, person. It
// returns a 429 when that took either over its limit, else err.
func (l *signinLimits) fail(addr, person string, now time.Time, err error) error {
	if e := l.take(addrKey(addr), addrBurst, addrRate, now); e != nil {
		return e
	}
	if person != "" {
		if e := l.take(personKey(person), personBurst, personRate, now); e != nil {
			return e
		}
	}
	return err
}

// signIn counts a sign-in of person: a 429 while they are over the limit.
func (l *signinLimits) signIn(person string, now time.Time) error {
	if err := l.checkKey(personKey(person), now); err != nil {
		return err
	}
	return l.take(personKey(person), personBurst, personRate, now)
}

func (l *signinLimits) take(key string, burst int, rate float64, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		l.prune(now)
		e = &limitEntry{b: ratelimit.New(rate, burst)}
		l.keys[key] = e
	}
	e.last = now
	if ok, wait := e.b.Take(now); !ok {
		e.until = now.Add(wait)
		return tooMany(wait)
	}
	return nil
}

// prune keeps the map bounded: entries unused for 10 minutes are full
// again and can go; if that is not enough, all go (forgetting is safe,
// it only lets a client try again sooner).
func (l *signinLimits) prune(now time.Time) {
	if len(l.keys) < maxLimitKeys {
		return
	}
	for k, e := range l.keys {
		if now.Sub(e.last) > 10*time.Minute {
			delete(l.keys, k)
		}
	}
	if len(l.keys) >= maxLimitKeys {
		clear(l.keys)
	}
}

func tooMany(wait time.Duration) error {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	return &httpjson.Error{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message:    "too many sign-in attempts; try again in " + strconv.Itoa(secs) + " s",
		RetryAfter: strconv.Itoa(secs)}
}
