package web

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/people"
)

// BenchmarkIdentify is the cost of finding who is behind a request on
// the hot path (every /api call, every /ws upgrade): a stored token among
// 1000, the session cookie, the shared token. Reported as ns/check.
func BenchmarkIdentify(b *testing.B) {
	creds, _ := auth.New(auth.Memory{}, nil)
	for i := range 1000 {
		if _, _, err := creds.Issue(auth.KindToken, "bo", "t"+strconv.Itoa(i), "", 0); err != nil {
			b.Fatal(err)
		}
	}
	token, _, _ := creds.Issue(auth.KindToken, "ann", "bench", "", 0)
	session, _, _ := creds.Issue(auth.KindSession, "ann", "", "link", 0)
	g := newGuard(Options{Token: "shared-token-0123456789", Credentials: creds,
		People: people.New([]config.Person{{ID: "ann", Role: "admin"}, {ID: "bo", Role: "member"}})})
	for _, tc := range []struct{ name, header, value string }{
		{"stored token", "Authorization", "Bearer " + token},
		{"session cookie", "Cookie", SessionCookie + "=" + session},
		{"shared token", "Authorization", "Bearer shared-token-0123456789"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/api/me", nil)
			r.Header.Set(tc.header, tc.value)
			for b.Loop() {
				if who, err := g.identify(nil, r); err != nil || who.Person.ID != "ann" {
					b.Fatalf("identify: %v %v", who, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/check")
		})
	}
}
