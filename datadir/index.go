// Package datadir opens what a data directory holds beside the chat log and is
// derived from it — the search index (its file, its follower, the memory
// items it indexes), shared by the server and frontdesk backup/restore so
// that they agree on where it lives — and reads a data directory without
// the server (which may be running or stopped): History is the history
// tools' source for `frontdesk mcp` and the search of `frontdesk history
// search`; Printer prints events and hits for `frontdesk history`.
package datadir

import (
	"log/slog"
	"path/filepath"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// IndexPath is the search index's file: derived from the chat log, so it
// lives beside the data and may be deleted at any time.
func IndexPath(cfg config.Config) string {
	return filepath.Join(cfg.DataDir, index.FileName)
}

// OpenIndex opens the search index and its Follower, which catches up
// from the chat log (logSeq is the log's newest seq) once Run starts.
// With search.embeddings.base_url set it also embeds for search by
// meaning (README "Search and recall").
func OpenIndex(cfg config.Config, logSeq int64, items *memory.Items, getenv func(string) string, logger *slog.Logger) (*index.Follower, error) {
	opts := index.FollowerOptions{
		Path:   IndexPath(cfg),
		Log:    history.NewReader(cfg.Session.ChatLogPath).Since,
		Memory: MemoryDocs(items),
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

// MemoryDocs reads the long-term memory items as index documents, one an
// item (memory.Doc: its id, then its text).
func MemoryDocs(items *memory.Items) index.MemorySource {
	return func() ([]index.Doc, error) {
		list := items.List()
		docs := make([]index.Doc, len(list))
		for i, it := range list {
			docs[i] = index.Doc{TS: it.Updated, Content: memory.Doc(it)}
		}
		return docs, nil
	}
}
