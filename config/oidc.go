package config

import "fmt"

// OIDCClientSecret returns auth.oidc's client secret: the value of the
// environment variable client_secret_env names, or "" for a public client
// (no client_secret_env: PKCE alone). A variable that is named but empty
// or unset is an error rather than a public client by accident: the
// provider would refuse every sign-in with an unhelpful message.
func (c *Config) OIDCClientSecret(getenv func(string) string) (string, error) {
	o := c.Auth.OIDC
	if o.Issuer == "" || o.ClientSecretEnv == "" {
		return "", nil
	}
	v := getenv(o.ClientSecretEnv)
	if v == "" {
		return "", fmt.Errorf("auth.oidc.client_secret_env names %s, which is empty or unset: "+
			"set it to the client secret the provider gave, or remove client_secret_env for a public client", o.ClientSecretEnv)
	}
	return v, nil
}
