package web

import (
	"net/http"

	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/people"
)

// actor is who asks through r at door: the person the guard signed in
// (people.Who in r's context), or nobody (a handler without the guard:
// tests; a nil Gate allows).
func actor(r *http.Request, door string) hub.Actor {
	who, _ := people.FromContext(r.Context())
	return who.Actor(door)
}

// memoryDoor is who changes memory through /api/memory: "web" for the
// page served here (a browser marks its fetches from the page's own
// origin Sec-Fetch-Site: same-origin; the CSP lets no other script run
// on it), "api" for everything else (curl, scripts, another site). It is
// a label in the item and its memory_changed event, not a permission:
// the token and the guard decide who may change memory at all.
func memoryDoor(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return memory.SourceWeb
	}
	return memory.SourceAPI
}
