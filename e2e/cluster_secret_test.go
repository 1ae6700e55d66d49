package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node whose cluster.nats.embedded.secret_env names an empty variable
// refuses to start (it would otherwise run its NATS without a password).
func TestClusterSecretEnvEmptyRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(`cluster:
  node: a
  nats:
    embedded:
      listen: "127.0.0.1:0"
      secret_env: FD_TEST_NATS_SECRET
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	// Without the check the node would serve until this deadline kills it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "-config", cfg, "-data", filepath.Join(dir, "d"), "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "FD_TEST_NATS_SECRET=")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("started with secret_env naming an empty variable")
	}
	if !strings.Contains(stderr.String(), "FD_TEST_NATS_SECRET") {
		t.Fatalf("the error does not name the variable: %s", stderr.String())
	}
}
