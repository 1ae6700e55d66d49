package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
)

// check-config prints "config ok" last and only when every check passed:
// an agent backend or an embeddings server that does not answer is an
// error with no "config ok" before it; an embeddings server that answers
// is named.
func TestCheckConfigOkOnlyLast(t *testing.T) {
	dir := t.TempDir()
	closed := fmt.Sprintf("http://127.0.0.1:%d/v1", freePorts(t, 1)[0])
	emb := embedtest.NewServer()
	defer emb.Close()
	cases := []struct {
		name, yaml, want string
		ok               bool
	}{
		{"agent down", "agent:\n  backend: openai\n  openai: {base_url: %q, model: m}\n", "agent backend openai is not reachable", false},
		{"embeddings down", "search:\n  embeddings: {base_url: %q, model: m}\n", "search.embeddings: " + closed + " does not answer", false},
		{"embeddings up", "search:\n  embeddings: {base_url: %q, model: m}\n", "search.embeddings " + emb.BaseURL() + ": answering", true},
	}
	for _, c := range cases {
		url := closed
		if c.ok {
			url = emb.BaseURL()
		}
		cfg := writeConfig(t, dir, strings.ReplaceAll(c.name, " ", "-")+".yaml",
			fmt.Sprintf("data_dir: %s\n"+c.yaml, filepath.Join(dir, "data"), url))
		out, err := checkConfigRun(t, cfg, nil)
		if !strings.Contains(out, c.want) || (err == nil) != c.ok {
			t.Errorf("%s: %v, want %q in:\n%s", c.name, err, c.want, out)
		}
		if got := strings.HasSuffix(out, "config ok\n"); got != c.ok || strings.Count(out, "config ok") > 1 || (!c.ok && strings.Contains(out, "config ok")) {
			t.Errorf("%s: \"config ok\" last is %v, want %v:\n%s", c.name, got, c.ok, out)
		}
	}
}

// check-config names the memory keys of issue 28 when their values are
// wrong, and passes the documented ones.
func TestCheckConfigMemoryKeys(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, yaml, want string
		ok               bool
	}{
		{"bad save approval", "memory: {save_approval: sometimes}\n", "memory.save_approval", false},
		{"no items", "memory: {max_items: 0}\n", "memory.max_items", false},
		{"documented values", "memory: {save_approval: always, max_items: 500}\n", "config ok", true},
	} {
		cfg := writeConfig(t, dir, strings.ReplaceAll(c.name, " ", "-")+".yaml",
			fmt.Sprintf("data_dir: %s\n", filepath.Join(dir, "data"))+c.yaml)
		out, err := checkConfigRun(t, cfg, nil)
		if !strings.Contains(out, c.want) || (err == nil) != c.ok {
			t.Errorf("%s: %v, want %q in:\n%s", c.name, err, c.want, out)
		}
	}
}
