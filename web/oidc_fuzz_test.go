package web

import (
	"encoding/base64"
	"net/http/httptest"
	"testing"
)

// The OIDC flow cookie comes back from the browser, so anyone can send
// anything in it: reading it never panics, and a flow it accepts has its
// state, nonce and verifier.
func FuzzOIDCFlowCookie(f *testing.F) {
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"s":"st","n":"no","v":"ve","e":1}`)))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"s":"","n":"no","v":"ve"}`)))
	f.Add("%%%not base64")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`[1,2,3]`)))
	l := &oidcLogin{}
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/auth/oidc/callback", nil)
		r.Header.Set("Cookie", oidcFlowCookie+"="+v)
		fl, had := l.flow(r)
		if had && (fl.State == "" || fl.Nonce == "" || fl.Verifier == "") {
			t.Fatalf("accepted a flow without state, nonce or verifier: %+v", fl)
		}
	})
}
