//go:build goolm

package matrix

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"maunium.net/go/mautrix"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// TestMapErr: the homeserver's 429 is a RetryError with its
// retry_after_ms; M_UNKNOWN_TOKEN wraps ErrUnauthorized; others pass.
func TestMapErr(t *testing.T) {
	httpErr := func(status int, code string, extra map[string]any) error {
		return mautrix.HTTPError{Response: &http.Response{StatusCode: status},
			RespError: &mautrix.RespError{ErrCode: code, StatusCode: status, ExtraData: extra}}
	}
	for _, tc := range []struct {
		name   string
		err    error
		after  time.Duration // a RetryError's, or 0
		unauth bool
	}{
		{"limit", httpErr(429, "M_LIMIT_EXCEEDED", map[string]any{"retry_after_ms": 1500.0}), 1500 * time.Millisecond, false},
		{"limit without a time", httpErr(429, "M_LIMIT_EXCEEDED", nil), time.Second, false},
		{"unknown token", httpErr(401, "M_UNKNOWN_TOKEN", nil), 0, true},
		{"forbidden", httpErr(403, "M_FORBIDDEN", nil), 0, false},
		{"not http", errors.New("dial: refused"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mapErr(tc.err)
			var re *chat.RetryError
			after := time.Duration(0)
			if errors.As(got, &re) {
				after = re.After
			}
			if after != tc.after || errors.Is(got, chat.ErrUnauthorized) != tc.unauth {
				t.Fatalf("mapErr = %v: got after %v, unauthorized %v; want %v, %v", got, after, errors.Is(got, chat.ErrUnauthorized), tc.after, tc.unauth)
			}
		})
	}
}
