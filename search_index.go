package main

import (
	"log/slog"
	"path/filepath"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// indexPath is the search index's file: derived from the chat log, so it
// lives beside the data and may be deleted at any time.
func indexPath(cfg config.Config) string {
	return filepath.Join(cfg.DataDir, index.FileName)
}

// openIndex opens the search index and its Follower, which catches up
// from the chat log (logSeq is the log's newest seq) once Run starts.
// With search.embeddings.base_url set it also embeds for search by
// meaning (README "Search and recall").
func openIndex(cfg config.Config, logSeq int64, mem *memory.Store, getenv func(string) string, logger *slog.Logger) (*index.Follower, error) {
	opts := index.FollowerOptions{
		Path:   indexPath(cfg),
		Log:    history.NewReader(cfg.Session.ChatLogPath).Since,
		Memory: memoryDocs(mem),
		LogSeq: logSeq,
		Logger: logger,
	}
	if e := cfg.Search.Embeddings; e.BaseURL != "" {
		key := ""
		if e.APIKeyEnv != "" {
			key = getenv(e.APIKeyEnv)
		}
		c, err := embed.New(embed.Options{BaseURL: e.BaseURL, Model: e.Model, APIKey: key, APIKeyEnv: e.APIKeyEnv, Batch: e.Batch})
		if err != nil {
			return nil, err
		}
		opts.Embedder = c
		logger.Info("search by meaning on", "embeddings", e.BaseURL, "model", e.Model)
	}
	return index.NewFollower(opts)
}

// memoryDocs reads long-term memory as index documents, one a section.
func memoryDocs(mem *memory.Store) index.MemorySource {
	return func() ([]index.Doc, error) {
		text, err := mem.LongTerm()
		if err != nil {
			return nil, err
		}
		secs := memory.Sections(text)
		docs := make([]index.Doc, len(secs))
		for i, s := range secs {
			docs[i] = index.Doc{TS: s.Time, Content: s.Text}
		}
		return docs, nil
	}
}
