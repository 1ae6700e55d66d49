package config

import (
	"bytes"
	"os"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzDecode: any bytes as a config file decode without panicking; an
// accepted file resolves and validates without panicking, and what it
// decoded to survives a round trip through YAML (testdata/fuzz holds the
// inputs that once failed).
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("../config.yaml"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"", "null", "[]", "{}", "data_dir: x\n", "server:\n  adr: x\n", "server: {addr: 1}\n",
		"session:\n  busy_policy: sometimes\n  idle_timeout_sec: -1\n",
		"agent:\n  command: {argv: [a, b], env: {K: v}}\n",
		"channels:\n  email:\n    enabled: true\n    allow_from: ['@x']\n    imap: {addr: 'h:1', tls: none}\n",
		"a: &a [x, x]\nb: &b [*a, *a]\n", "server: !!binary aGk=\n", "? [a]\n: b\n",
		"server:\n  addr: \"127.0.0.1:8080\"\nserver:\n  addr: x\n", "\t- x", "data_dir: [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := Defaults()
		if err := Decode(b, &cfg); err != nil {
			if err.Error() == "" {
				t.Fatal("an error with no message")
			}
			return
		}
		cfg.Resolve()
		_ = cfg.Validate()
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal the decoded config: %v", err)
		}
		again := Defaults()
		if err := Decode(out, &again); err != nil {
			t.Fatalf("the decoded config does not decode again: %v\n%s", err, out)
		}
		again.Resolve()
		// Compared as YAML: a null list (allow_from:) decodes to nil and
		// marshals as [], which decodes to an empty list — the same config.
		if out2, _ := yaml.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", out, out2)
		}
	})
}
