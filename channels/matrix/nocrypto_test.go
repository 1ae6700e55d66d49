//go:build !goolm

package matrix

import (
	"strings"
	"testing"
)

// TestNeedsTag: without -tags goolm, New says how to build.
func TestNeedsTag(t *testing.T) {
	_, err := New(Options{Homeserver: "http://127.0.0.1:1", UserID: "@bot:localhost", Password: "x", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "-tags goolm") {
		t.Fatalf("New = %v, want the goolm tag named", err)
	}
}
