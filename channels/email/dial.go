package email

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

const dialTimeout = 30 * time.Second

// quietConn bounds how long a read may wait for the peer. go-imap's client
// clears the read deadline while it waits between responses (and so during
// IDLE): a server that vanished without a FIN or RST would leave it
// blocked forever. Whenever the client clears the deadline (or sets a
// later one), quietConn puts in one quiet from now; the IDLE watchdog and
// the poll loop make sure a live server says something well within it.
type quietConn struct {
	net.Conn
	quiet time.Duration
}

func (c *quietConn) SetReadDeadline(t time.Time) error {
	if limit := time.Now().Add(c.quiet); t.IsZero() || t.After(limit) {
		t = limit
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *quietConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// tlsConfig is the base configuration with ServerName set for host.
func (c *Channel) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{}
	if c.opts.TLSConfig != nil {
		cfg = c.opts.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

// dial opens a TCP connection, with implicit TLS when mode is TLSImplicit.
// STARTTLS is left to the protocol client.
func (c *Channel) dial(ctx context.Context, addr, mode string, quiet time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: time.Minute}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	var conn net.Conn = raw
	if quiet > 0 {
		conn = &quietConn{Conn: raw, quiet: quiet}
	}
	if mode != TLSImplicit {
		return conn, nil
	}
	host, _, _ := net.SplitHostPort(addr)
	tc := tls.Client(conn, c.tlsConfig(host))
	hctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}
