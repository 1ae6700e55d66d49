package config

import (
	"strings"
	"testing"
)

func TestOIDCClientSecret(t *testing.T) {
	env := map[string]string{"FD_OIDC_SECRET": "s3cret"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name          string
		oidc          OIDC
		want, wantErr string
	}{
		{"OIDC off", OIDC{ClientSecretEnv: "FD_OIDC_SECRET"}, "", ""},
		{"public client", OIDC{Issuer: "https://id.example.com"}, "", ""},
		{"confidential client", OIDC{Issuer: "https://id.example.com", ClientSecretEnv: "FD_OIDC_SECRET"}, "s3cret", ""},
		{"variable unset", OIDC{Issuer: "https://id.example.com", ClientSecretEnv: "FD_NOPE"}, "", "auth.oidc.client_secret_env names FD_NOPE, which is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Auth: Auth{OIDC: tc.oidc}}
			got, err := c.OIDCClientSecret(getenv)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %q, %v; want %q, error with %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
