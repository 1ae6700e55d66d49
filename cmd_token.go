package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/frontdesk-hq/frontdesk/admin"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/people"
)

const tokenUsage = `usage: frontdesk token add <person> [-label L] [-expires 90d] [flags]
       frontdesk token list [flags]
       frontdesk token revoke <person> <label|id> [flags]
       frontdesk login-link <person> [flags]

A running server does it over its admin socket (data_dir/admin.sock);
with the server stopped the command opens data_dir/auth itself (a
cluster node needs a running node). Tokens and links are printed once,
alone on the last line; only their hashes are stored.

flags:
  -config FILE   config file (default config.yaml if present)
  -data DIR      data directory (overrides data_dir)
  -label L       token add: the token's name (unique per person)
  -expires D     token add: 90d, 12h, 30m (default: never)
`

// tokenFlags parses args, flags before or after the positional ones.
func tokenFlags(name string, args []string, stderr io.Writer) (pos []string, label, expires string, open func() (admin.Admin, func(), error), err error) {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cfgPath := fl.String("config", "", "")
	dataDir := fl.String("data", "", "")
	fl.StringVar(&label, "label", "", "")
	fl.StringVar(&expires, "expires", "", "")
	for {
		if err := fl.Parse(args); err != nil {
			fmt.Fprint(stderr, tokenUsage)
			return nil, "", "", nil, &admin.UsageError{Msg: name + ": " + err.Error()}
		}
		if fl.NArg() == 0 {
			break
		}
		pos, args = append(pos, fl.Arg(0)), fl.Args()[1:]
	}
	open = func() (admin.Admin, func(), error) { return openAdmin(*cfgPath, *dataDir) }
	return pos, label, expires, open, nil
}

// runToken runs "frontdesk token …"; args are those after "token".
func runToken(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" || args[0] == "--help" {
		fmt.Fprint(stderr, tokenUsage)
		if len(args) == 0 {
			return &admin.UsageError{Msg: "token: missing command (add, list or revoke)"}
		}
		return nil
	}
	name := "token " + args[0]
	pos, label, expires, open, err := tokenFlags(name, args[1:], stderr)
	if err != nil {
		return err
	}
	want := map[string]int{"add": 1, "list": 0, "revoke": 2}[args[0]]
	if _, ok := map[string]bool{"add": true, "list": true, "revoke": true}[args[0]]; !ok || len(pos) != want {
		fmt.Fprint(stderr, tokenUsage)
		return &admin.UsageError{Msg: fmt.Sprintf("%s: wrong arguments %q", name, pos)}
	}
	ad, done, err := open()
	if err != nil {
		return err
	}
	defer done()
	switch args[0] {
	case "add":
		a, err := ad.AddToken(pos[0], label, expires)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %q for %s (id %s, expires %s); shown this once:\n%s\n",
			a.Credential.Label, a.Credential.Person, a.Credential.ID, when(a.Credential.Expires), a.Secret)
	case "revoke":
		c, err := ad.Revoke(pos[0], pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s %s of %s (id %s)\n", c.Kind, c.Label, c.Person, c.ID)
	case "list":
		list, err := ad.List()
		if err != nil {
			return err
		}
		printCredentials(stdout, list)
	}
	return nil
}

// runLoginLink runs "frontdesk login-link <person>".
func runLoginLink(args []string, stdout, stderr io.Writer) error {
	pos, _, _, open, err := tokenFlags("login-link", args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, tokenUsage)
		return &admin.UsageError{Msg: "login-link: give one person"}
	}
	ad, done, err := open()
	if err != nil {
		return err
	}
	defer done()
	a, err := ad.LoginLink(pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "login link for %s, once, until %s:\n%s\n", pos[0], when(a.Credential.Expires), a.URL)
	return nil
}

func when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func printCredentials(w io.Writer, list []auth.Credential) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSON\tLABEL\tKIND\tID\tCREATED\tEXPIRES")
	for _, c := range list {
		label := c.Label
		if label == "" {
			label = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Person, label, c.Kind, c.ID, when(c.Created), when(c.Expires))
	}
	tw.Flush()
}

// openAdmin reaches the running server's admin socket, or with the server
// stopped opens the data directory's credentials under their lock (a
// server starting meanwhile waits for it). A stopped cluster node has its
// credentials in the cluster: it needs a running node.
func openAdmin(cfgPath, dataDir string) (admin.Admin, func(), error) {
	cfg, err := config.ForCommand(cfgPath, "", dataDir)
	if err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(cfg.DataDir, admin.SocketName)
	if c, err := admin.Dial(sock); err == nil {
		return c, func() {}, nil
	}
	if cfg.Cluster.Enabled() {
		return nil, nil, fmt.Errorf("cluster node %s is not running (nothing answers on %s): on a cluster the credentials live in the cluster, "+
			"so this command needs a running node: start this node, or run the command on a running one", cfg.Cluster.Node, sock)
	}
	dir := filepath.Join(cfg.DataDir, "auth")
	unlock, err := auth.Lock(dir, 2*time.Second)
	if errors.Is(err, auth.ErrLocked) {
		return nil, nil, fmt.Errorf("%w, but nothing answers on %s: the server is starting or stopping (try again in a moment), or runs without its admin socket (its log says why)", err, sock)
	}
	if err != nil {
		return nil, nil, err
	}
	store, err := openCredentials(dir)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	pd := people.New(cfg.People)
	pd.GuestsFrom(store) // OIDC guests (auth.oidc.new_people) too
	svc := &admin.Service{Store: store, People: pd, Addr: cfg.Server.Addr,
		Record: store.AddPending, By: "cli", Now: time.Now}
	return admin.Local{Service: svc}, unlock, nil
}

// openCredentials opens the file store under dir, pruning the expired.
func openCredentials(dir string) (*auth.Store, error) {
	f, err := auth.OpenFile(dir)
	if err != nil {
		return nil, err
	}
	s, err := auth.New(f, nil)
	if err != nil {
		return nil, err
	}
	_, err = s.Prune()
	return s, err
}
