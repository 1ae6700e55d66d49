package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/datadir"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

// runMCP runs "frontdesk mcp": the history tools (history_search,
// history_recent, history_range) over MCP stdio, read from the data
// directory with the server running or stopped — for desktop MCP clients
// that start a command. stdout carries the protocol only; notes go to
// stderr.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk mcp", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: frontdesk mcp [-config FILE] [-data DIR]\n\n"+
			"Serves the conversation's history tools over MCP on stdin/stdout (read-only).\n\nflags:\n")
		fl.PrintDefaults()
	}
	cfgPath := fl.String("config", "", "config file (default config.yaml if present)")
	dataDir := fl.String("data", "", "data directory (overrides data_dir)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("mcp: unexpected argument %q (see frontdesk mcp -h)", fl.Arg(0))
	}
	cfg, err := config.ForCommand(*cfgPath, "", *dataDir)
	if err != nil {
		return err
	}
	oh := datadir.NewHistory(cfg, stderr)
	defer oh.Close()
	return mcp.ServeStdio(ctx, mcp.NewServer(version, hub.HistoryTools(oh, "")), stdin, stdout)
}
