package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOIDCSecretVariableMustBeSet: auth.oidc.client_secret_env naming an
// unset variable stops check-config (and serve) with an error naming it;
// set, the configuration passes.
func TestOIDCSecretVariableMustBeSet(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	yaml := "server: {addr: \"127.0.0.1:0\"}\n" +
		"people: [{id: ann, role: admin, emails: [ann@example.com]}]\n" +
		"auth:\n  oidc:\n    issuer: https://id.example.com\n    client_id: frontdesk\n" +
		"    client_secret_env: FD_TEST_OIDC_SECRET\n    redirect_url: https://desk.example.com/auth/oidc/callback\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"", "s3cret"} {
		getenv := func(k string) string {
			if k == "FD_TEST_OIDC_SECRET" {
				return secret
			}
			return ""
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"frontdesk", "check-config", "-config", cfgPath, "-data", dir}, getenv,
			strings.NewReader(""), &stdout, &stderr)
		switch {
		case secret == "" && (err == nil || !strings.Contains(err.Error(), "FD_TEST_OIDC_SECRET, which is empty")):
			t.Errorf("secret unset: err %v, want one naming FD_TEST_OIDC_SECRET", err)
		case secret != "" && err != nil:
			t.Errorf("secret set: err %v, want none", err)
		}
	}
}
