package config

import (
	"net/url"
	"strings"
)

// Search configures history search (README "Search and recall").
type Search struct {
	Embeddings Embeddings `yaml:"embeddings"`
}

// Embeddings configures search by meaning: an OpenAI-compatible
// /v1/embeddings endpoint whose vectors are fused with the keyword
// ranking. With BaseURL empty (the default) search is by keywords only.
type Embeddings struct {
	// BaseURL is the API root, usually ending in /v1 (the client posts to
	// BaseURL + "/embeddings"), for example http://127.0.0.1:11434/v1 for
	// Ollama. Empty: keywords only, no vectors are made.
	BaseURL string `yaml:"base_url"`
	// Model is the embedding model the server knows (nomic-embed-text,
	// text-embedding-3-small). Required with BaseURL. Changing it
	// re-embeds everything.
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key.
	// Empty (the default), or an unset variable, sends no key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Batch is how many texts one request carries. 1 to 2048; default 64.
	Batch int `yaml:"batch"`
}

// defaultSearch are the defaults of the search block.
func defaultSearch() Search {
	return Search{Embeddings: Embeddings{Batch: 64}}
}

// validateSearch checks the search block.
func (c *Config) validateSearch(bad badFunc) {
	e := c.Search.Embeddings
	if e.BaseURL != "" {
		if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("search.embeddings.base_url", "%q is not an http(s) URL; use e.g. http://127.0.0.1:11434/v1, or leave it empty for keywords only", e.BaseURL)
		}
		if strings.TrimSpace(e.Model) == "" {
			bad("search.embeddings.model", "must name an embedding model the server knows, e.g. nomic-embed-text, when base_url is set")
		}
	}
	if e.APIKeyEnv != "" && !envName(e.APIKeyEnv) {
		bad("search.embeddings.api_key_env", "%q is not an environment variable name", e.APIKeyEnv)
	}
	if e.Batch < 1 || e.Batch > 2048 {
		bad("search.embeddings.batch", "%d: use 1 to 2048 texts a request (default 64)", e.Batch)
	}
}

// Memory configures the memory files.
type Memory struct {
	// Dir holds short_term.md and items.json (the long-term memory
	// items). Default <data_dir>/memory.
	Dir string `yaml:"dir"`
	// ContextTokens bounds the memory items put into each turn's context
	// (about 4 bytes a token), newest and most used first; the rest are
	// found with history_search type:memory. -1 puts all of them in.
	// Default 2000.
	ContextTokens int `yaml:"context_tokens"`
	// SaveApproval says when the agent's memory_save waits for a person's
	// approval: "untrusted" (default) on a turn whose input came from a
	// door other than the web page and the terminal (email, webhook, MCP
	// send_message, a schedule), "always", or "never".
	SaveApproval string `yaml:"save_approval"`
	// MaxItems caps the number of memory items: a save when full is
	// refused (409 memory_full) at every door and for the agent. Every
	// change rewrites items.json whole, so the cap bounds its cost.
	// Default 2000.
	MaxItems int `yaml:"max_items"`
}

// Values of memory.save_approval.
const (
	SaveApprovalUntrusted = "untrusted"
	SaveApprovalAlways    = "always"
	SaveApprovalNever     = "never"
)

// DefaultMaxItems is memory.max_items' default.
const DefaultMaxItems = 2000

// maxMaxItems is the largest memory.max_items.
const maxMaxItems = 100000

// validate checks the memory block.
func (m Memory) validate(bad func(key, format string, args ...any)) {
	if m.ContextTokens < 1 && m.ContextTokens != -1 {
		bad("memory.context_tokens", "%d is not a budget: use a number of tokens from 1, or -1 for all items (default 2000)", m.ContextTokens)
	}
	switch m.SaveApproval {
	case SaveApprovalUntrusted, SaveApprovalAlways, SaveApprovalNever:
	default:
		bad("memory.save_approval", "%q: use untrusted (default: approval for a save asked by email, webhook, MCP or a schedule), always or never", m.SaveApproval)
	}
	if m.MaxItems < 1 || m.MaxItems > maxMaxItems {
		bad("memory.max_items", "%d: use 1 to %d items (default %d)", m.MaxItems, maxMaxItems, DefaultMaxItems)
	}
}
