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
}
