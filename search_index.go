package main

import (
	"log/slog"
	"path/filepath"

	"github.com/frontdesk-hq/frontdesk/config"
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
func openIndex(cfg config.Config, logSeq int64, mem *memory.Store, logger *slog.Logger) (*index.Follower, error) {
	return index.NewFollower(index.FollowerOptions{
		Path:   indexPath(cfg),
		Log:    history.NewReader(cfg.Session.ChatLogPath).Since,
		Memory: memoryDocs(mem),
		LogSeq: logSeq,
		Logger: logger,
	})
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
