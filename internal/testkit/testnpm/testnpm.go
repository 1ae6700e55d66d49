// Package testnpm finds the MCP reference servers that .ci/run installs
// from npm, for the tests that run them. It is imported only by tests.
package testnpm

import (
	"os"
	"path/filepath"
	"testing"
)

// Server returns the path of the reference MCP server bin installed under
// $FRONTDESK_MCP_NPM (default ~/.cache/frontdesk-mcp-npm). Without it the
// test is skipped — except in CI, which installs them, where it fails.
func Server(t testing.TB, bin string) string {
	t.Helper()
	dir := os.Getenv("FRONTDESK_MCP_NPM")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "frontdesk-mcp-npm")
	}
	p := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (.ci/run installs it): %v", bin, err)
		}
		t.Skipf("%s is not installed (npm install --prefix %s @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem)", bin, dir)
	}
	return p
}
