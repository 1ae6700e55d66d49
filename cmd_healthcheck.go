package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/config"
)

const healthcheckUsage = `usage: frontdesk healthcheck [-addr HOST:PORT] [-config FILE]

Asks a running frontdesk for GET /healthz: exits 0 when it answers 200,
and non-zero with the reason on stderr otherwise (not listening, 503
while shutting down or on a storage fault, no answer within 3 s).
The address is -addr, else server.addr from the config; a wildcard
address (0.0.0.0, [::]) is asked on loopback. With an auth token
configured it is sent.
`

// runHealthcheck runs "frontdesk healthcheck …"; args are those after
// "healthcheck". It is what a container's HEALTHCHECK or a monitoring
// script calls: no curl is needed in the image.
func runHealthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk healthcheck", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cfgPath := fl.String("config", "", "")
	addr := fl.String("addr", "", "")
	timeout := fl.Duration("timeout", 3*time.Second, "")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, healthcheckUsage)
			return nil
		}
		return fmt.Errorf("healthcheck: %w (see frontdesk healthcheck -h)", err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q (see frontdesk healthcheck -h)", fl.Arg(0))
	}
	cfg, err := config.ForCommand(*cfgPath, *addr, "")
	if err != nil {
		return err
	}
	url := "http://" + dialAddr(cfg.Server.Addr) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	if token := cfg.AuthTokenValue(getenv); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("healthcheck: %s did not answer within %s", url, *timeout)
		}
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "frontdesk: %s ok\n", url)
	return nil
}

// dialAddr is where to reach a server listening on addr: a wildcard or
// empty host is reached on loopback.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
