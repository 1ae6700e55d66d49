package web

import (
	"testing"
	"time"
)

// SetOIDCClock makes the OIDC sign-in's clock run offset ahead until t
// ends. Tests that use it must not run in parallel with other OIDC tests.
func SetOIDCClock(t *testing.T, offset time.Duration) {
	oidcNow = func() time.Time { return time.Now().Add(offset) }
	t.Cleanup(func() { oidcNow = time.Now })
}
