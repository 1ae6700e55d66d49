package e2e

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

func TestHealthcheckExitCode(t *testing.T) {
	// The binary exits non-zero with the reason on stderr.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stderr strings.Builder
	cmd := exec.Command(binary, "healthcheck", "-addr", addr)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("healthcheck of a closed port exited 0")
	}
	if !strings.Contains(stderr.String(), "connection refused") {
		t.Fatalf("stderr %q does not say why", stderr.String())
	}
}
