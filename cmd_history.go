package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/datadir"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
)

const historyUsage = `usage: frontdesk history recent [-n 20] [flags]
       frontdesk history range [-from SEQ|TIME] [-to SEQ|TIME] [-limit 1000] [flags]
       frontdesk history search [-limit 20] [flags] QUERY...

Reads the chat log in the data directory (the server need not run) and
prints a table, or with -json one JSON object per line: events for recent
and range, hits for search.

  recent   the last n events
  range    the events from -from to -to, both inclusive; each is a seq
           number or an RFC 3339 time (2026-11-22T10:00:00Z); a missing
           end is open
  search   ranked full-text search over user and assistant messages and
           long-term memory, best first (QUERY syntax below); reads the
           search index (read-only) and says so on stderr, or scans the
           chat log when there is no usable index

QUERY: words in any order, all of which must match (stemmed, case and
accents folded; with no such message, the best partial matches);
"an exact phrase"; prefix*; filters channel:NAME, from:ADDRESS,
type:user|assistant|memory, before:DATE, after:DATE (2026-11-22 or RFC 3339).

flags:
  -config FILE   config file (default config.yaml if present)
  -data DIR      data directory (overrides data_dir)
  -json          print NDJSON instead of a table
`

// runHistory runs "frontdesk history …"; args are those after "history".
// It only reads files, so it works with the server stopped (or running).
// Results go to stdout; notes on skipped lines or a cut range go to stderr.
func runHistory(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, historyUsage)
		return errors.New("history: missing command (recent, range or search)")
	}
	name, args := args[0], args[1:]
	var cmd historyCmd
	switch name {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, historyUsage)
		return nil
	case "recent":
		cmd = &historyRecent{}
	case "range":
		cmd = &historyRange{}
	case "search":
		cmd = &historySearch{}
	default:
		return fmt.Errorf("history: unknown command %q, want recent, range or search (see frontdesk history -h)", name)
	}

	fl := flag.NewFlagSet("frontdesk history "+name, flag.ContinueOnError)
	fl.SetOutput(io.Discard) // errors are returned; -h prints historyUsage
	cfgPath := fl.String("config", "", "")
	dataDir := fl.String("data", "", "")
	asJSON := fl.Bool("json", false, "")
	cmd.flags(fl)
	words, err := parseInterspersed(fl, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, historyUsage)
		return nil
	}
	if err != nil {
		return fmt.Errorf("history %s: %w (see frontdesk history -h)", name, err)
	}
	if _, isSearch := cmd.(*historySearch); !isSearch && len(words) > 0 {
		return fmt.Errorf("history %s: unexpected argument %q (see frontdesk history -h)", name, words[0])
	}

	cfg, err := config.ForCommand(*cfgPath, "", *dataDir)
	if err != nil {
		return err
	}
	path := cfg.Session.ChatLogPath
	parts, err := history.Parts(path)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("history: no chat log at %s (wrong -data or -config?)", path)
	}
	env := historyEnv{
		cfg: cfg, r: history.NewReader(path), words: words, stderr: stderr,
		out: &datadir.Printer{W: stdout, Note: stderr, JSON: *asJSON, Width: termWidth(getenv)},
	}
	st, err := cmd.run(env)
	if err != nil {
		return err
	}
	if st.Skipped > 0 {
		fmt.Fprintf(stderr, "frontdesk: skipped %d malformed or partial lines or damaged .gz parts\n", st.Skipped)
	}
	return nil
}

// historyCmd is one "frontdesk history" subcommand: its own flags, then a
// run over the chat log.
type historyCmd interface {
	flags(fl *flag.FlagSet)
	run(env historyEnv) (history.Stats, error)
}

// historyEnv is what every subcommand gets once the flags are parsed.
type historyEnv struct {
	cfg    config.Config
	r      *history.Reader
	out    *datadir.Printer
	stderr io.Writer
	words  []string // the arguments that are not flags (search's query)
}

type historyRecent struct{ n int }

func (c *historyRecent) flags(fl *flag.FlagSet) { fl.IntVar(&c.n, "n", 20, "") }

func (c *historyRecent) run(env historyEnv) (history.Stats, error) {
	if c.n < 1 {
		return history.Stats{}, fmt.Errorf("history recent: -n %d, want at least 1", c.n)
	}
	evs, st, err := env.r.Recent(c.n)
	if err != nil {
		return st, err
	}
	return st, env.out.Events(evs)
}

type historyRange struct {
	from, to string
	limit    int
}

func (c *historyRange) flags(fl *flag.FlagSet) {
	fl.StringVar(&c.from, "from", "", "")
	fl.StringVar(&c.to, "to", "", "")
	fl.IntVar(&c.limit, "limit", 1000, "")
}

func (c *historyRange) run(env historyEnv) (history.Stats, error) {
	var none history.Stats
	if c.limit < 0 {
		return none, fmt.Errorf("history range: -limit %d, want 0 (no limit) or more", c.limit)
	}
	f, err := history.ParseBound(c.from)
	if err != nil {
		return none, fmt.Errorf("history range: -from: %w", err)
	}
	t, err := history.ParseBound(c.to)
	if err != nil {
		return none, fmt.Errorf("history range: -to: %w", err)
	}
	if f.Seq != 0 && t.Seq != 0 && f.Seq > t.Seq || !f.Time.IsZero() && !t.Time.IsZero() && f.Time.After(t.Time) {
		return none, fmt.Errorf("history range: -from %s is after -to %s", c.from, c.to)
	}
	evs, truncated, st, err := env.r.Range(context.Background(), f, t, c.limit)
	if err != nil {
		return st, err
	}
	if err := env.out.Events(evs); err != nil {
		return st, err
	}
	if truncated {
		last := evs[len(evs)-1].Seq
		fmt.Fprintf(env.stderr, "frontdesk: stopped at -limit %d; more events follow (continue with -from %d)\n", c.limit, last+1)
	}
	return st, nil
}

type historySearch struct{ limit int }

func (c *historySearch) flags(fl *flag.FlagSet) { fl.IntVar(&c.limit, "limit", 20, "") }

func (c *historySearch) run(env historyEnv) (history.Stats, error) {
	var none history.Stats
	if c.limit < 1 || c.limit > maxSearchLimit {
		return none, fmt.Errorf("history search: -limit %d, want 1 to %d", c.limit, maxSearchLimit)
	}
	q := strings.Join(env.words, " ")
	if strings.TrimSpace(q) == "" {
		return none, errors.New("history search: missing QUERY (see frontdesk history -h)")
	}
	oh := datadir.NewHistory(env.cfg, env.stderr)
	defer oh.Close()
	res, err := oh.SearchIndex(context.Background(), q, index.Options{Limit: c.limit})
	if err != nil {
		return none, fmt.Errorf("history search: %w", err)
	}
	if res.Mode == index.ModeOr && len(res.Hits) > 0 {
		fmt.Fprintln(env.stderr, "frontdesk: no message has every word; showing the best partial matches")
	}
	return none, env.out.Hits(res.Hits)
}

// maxSearchLimit bounds history search -limit.
const maxSearchLimit = 1000

// parseInterspersed parses flags anywhere among the arguments (so that
// "search foo -json" works) and returns the others; after "--" everything
// is an argument.
func parseInterspersed(fl *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return words, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(words, rest...), nil
		}
		words = append(words, rest[0])
		args = rest[1:]
	}
}

// termWidth is the width tables are cut to: $COLUMNS if it is set, else 100.
func termWidth(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 100
}
