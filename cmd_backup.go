package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/frontdesk-hq/frontdesk/backup"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/datadir"
)

const backupUsage = `usage: frontdesk backup -o FILE.tar.gz [-config FILE] [-data DIR]
       frontdesk restore [-config FILE] [-data DIR] FILE.tar.gz

backup   writes a consistent snapshot of the data directory to FILE.tar.gz,
         with the server running or stopped: the chat log and its rotated
         parts, memory, session.json, the email spool and cursor, audit
         files and everything else there, except the search index (derived:
         the next start rebuilds it). The server goes on while it runs.
         On a cluster node it backs up that node's own copy (any node will
         do) and leaves out the embedded NATS store (data_dir/nats).
restore  extracts FILE.tar.gz into the data directory, which must be empty
         or absent; a failed restore leaves nothing behind.

flags:
  -o FILE        the archive to write (backup); - for stdout
  -config FILE   config file (default config.yaml if present)
  -data DIR      data directory (overrides data_dir)
`

// runBackup runs "frontdesk backup …"; args are those after "backup".
func runBackup(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk backup", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cfgPath := fl.String("config", "", "")
	dataDir := fl.String("data", "", "")
	out := fl.String("o", "", "")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, backupUsage)
			return nil
		}
		return fmt.Errorf("backup: %w (see frontdesk backup -h)", err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("backup: unexpected argument %q (see frontdesk backup -h)", fl.Arg(0))
	}
	if *out == "" {
		return errors.New("backup: missing -o FILE.tar.gz (see frontdesk backup -h)")
	}
	cfg, err := config.ForCommand(*cfgPath, "", *dataDir)
	if err != nil {
		return err
	}
	l, err := backup.NewLayout(cfg, datadir.IndexPath(cfg))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if st, err := os.Stat(l.DataDir); err != nil || !st.IsDir() {
		return fmt.Errorf("backup: no data directory at %s (wrong -data or -config?)", l.DataDir)
	}
	var sum backup.Sum
	if *out == "-" {
		sum, err = backup.Stream(l, stdout, version)
		stdout = stderr // the summary must not corrupt the archive
	} else {
		sum, err = backup.Write(l, *out, version)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "frontdesk: backed up %s to %s: %d files, %d bytes%s\n", l.DataDir, *out, sum.Files, sum.Bytes, sum.SeqNote())
	for _, s := range sum.Skipped {
		fmt.Fprintf(stderr, "frontdesk: left out %s (not a regular file)\n", s)
	}
	return nil
}

// runRestore runs "frontdesk restore …"; args are those after "restore".
func runRestore(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk restore", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cfgPath := fl.String("config", "", "")
	dataDir := fl.String("data", "", "")
	files, err := parseInterspersed(fl, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, backupUsage)
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: %w (see frontdesk restore -h)", err)
	}
	switch {
	case len(files) == 0:
		return errors.New("restore: missing FILE.tar.gz (see frontdesk restore -h)")
	case len(files) > 1:
		return fmt.Errorf("restore: unexpected argument %q (see frontdesk restore -h)", files[1])
	}
	cfg, err := config.ForCommand(*cfgPath, "", *dataDir)
	if err != nil {
		return err
	}
	l, err := backup.NewLayout(cfg, datadir.IndexPath(cfg))
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	n, err := backup.Restore(files[0], l, backup.LimitsFor(cfg))
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(stdout, "frontdesk: restored %d files from %s into %s; the search index is rebuilt at the next start\n",
		n, files[0], l.DataDir)
	return nil
}
