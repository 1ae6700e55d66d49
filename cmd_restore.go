package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/frontdesk-hq/frontdesk/backup"
	"github.com/frontdesk-hq/frontdesk/datadir"
)

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
	cfg, err := loadConfig(*cfgPath, "", *dataDir)
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
