package backup

import (
	"fmt"
	"path"
	"strings"

	"github.com/frontdesk-hq/frontdesk/config"
)

// Limits are the largest files a data directory can hold, by place: a
// restore refuses an archive entry over them before writing anything (a
// few MB of gzip can expand to GiBs of zeros). Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// Attachment caps a stored attachment (attachments/<xx>/<sha256>):
	// attachments.max_bytes.
	Attachment int64
	// LogPart caps the live chat log and each rotated part (.gz too):
	// twice session.log_rotate_mb, at least MinLogPart. A part is at
	// most log_rotate_mb when written (the rotation happens before a
	// write that would pass it) and a gzipped one is smaller; the factor
	// leaves room for a backup made with a larger setting since lowered.
	LogPart int64
	// State caps the small state files: session.json, email/state.json
	// and an attachment's name record.
	State int64
	// Schedules caps schedules.json.
	Schedules int64
	// Other caps everything else: memory files, audit files, the email
	// spool. long_term.md and the audit files grow with the
	// conversation, so this is generous; the free-space check bounds the
	// whole.
	Other int64
}

// Defaults of Limits.
const (
	MinLogPart = 64 << 20
	maxState   = 1 << 20
	maxSched   = 64 << 20
	maxOther   = 1 << 30
)

// LimitsFor derives the limits from a configuration.
func LimitsFor(cfg config.Config) Limits {
	return Limits{
		Attachment: cfg.Attachments.MaxBytes,
		LogPart:    max(2*int64(cfg.Session.LogRotateMB)<<20, MinLogPart),
		State:      maxState,
		Schedules:  maxSched,
		Other:      maxOther,
	}
}

func (lim Limits) withDefaults() Limits {
	def := LimitsFor(config.Defaults())
	for _, f := range []struct{ v, d *int64 }{{&lim.Attachment, &def.Attachment}, {&lim.LogPart, &def.LogPart},
		{&lim.State, &def.State}, {&lim.Schedules, &def.Schedules}, {&lim.Other, &def.Other}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return lim
}

// check refuses a file of size bytes at name (slash-separated, relative
// to the data directory) that is larger than its place allows, naming the
// setting to change when there is one.
func (lim Limits) check(name string, size int64, l Layout) error {
	lim = lim.withDefaults()
	max, what := lim.Other, "a memory, audit or email file (a fixed limit)"
	switch {
	case isLogPartName(name, l.ChatLog):
		max, what = lim.LogPart, "a chat log part (twice session.log_rotate_mb, at least 64 MiB: "+
			"restore with the log_rotate_mb the backup was made with)"
	case strings.HasPrefix(name, "attachments/") && strings.HasSuffix(name, ".json"):
		max, what = lim.State, "an attachment's name record (a fixed limit)"
	case strings.HasPrefix(name, "attachments/"):
		max, what = lim.Attachment, "an attachment (attachments.max_bytes)"
	case name == "session.json" || name == "email/state.json":
		max, what = lim.State, "a state file (a fixed limit)"
	case name == "schedules.json":
		max, what = lim.Schedules, "the schedules file (a fixed limit)"
	}
	if size > max {
		return fmt.Errorf("entry %q is %s (%d bytes), more than the %s allowed for %s; "+
			"refusing the archive, nothing was restored", name, mib(size), size, mib(max), what)
	}
	return nil
}

// isLogPartName reports whether name is the chat log (chatLog, relative
// to the data directory) or one of its rotated parts, gzipped or not.
func isLogPartName(name, chatLog string) bool {
	if path.Dir(name) != path.Dir(chatLog) {
		return false
	}
	base, live := path.Base(name), path.Base(chatLog)
	ext := path.Ext(live)
	return base == live || strings.HasPrefix(base, strings.TrimSuffix(live, ext)+"-") &&
		(strings.HasSuffix(base, ext) || strings.HasSuffix(base, ext+".gz"))
}
