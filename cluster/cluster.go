// Package cluster runs frontdesk on several machines over NATS JetStream:
// a replicated stream is the chat log (an append is a publish with the
// expected last sequence, so a node that lost the lease is fenced), a KV
// bucket holds the lease that picks the one turn runner, core NATS
// request/reply forwards inputs to the lease holder, and an object store
// keeps attachments.
//
// It imports only event and history of ours, and NATS. Nothing outside this
// package sees a NATS type: the hub gets its log and lease through its own
// interfaces, which main wires to a *Node.
package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names shared by every node of a cluster.
const (
	// ClusterName is the NATS cluster name of the embedded servers.
	ClusterName = "frontdesk"
	// LogStream is the stream that holds the chat log, one event a message,
	// the stream sequence equal to the event's seq.
	LogStream = "FRONTDESK_LOG"
	// LogSubject is LogStream's only subject.
	LogSubject = "frontdesk.log"
	// LeaseBucket is the KV bucket of the lease; its key LeaseKey names the
	// holder.
	LeaseBucket = "FRONTDESK_LEASE"
	// LeaseKey is the lease's key in LeaseBucket.
	LeaseKey = "holder"
	// FilesBucket is the object store of attachments, keyed by sha256.
	FilesBucket = "FRONTDESK_FILES"
	// LiveSubject carries live frames (deltas) between nodes on core NATS.
	LiveSubject = "frontdesk.live"
	// RPCPrefix prefixes the forwarding subjects: frontdesk.rpc.<name>.
	RPCPrefix = "frontdesk.rpc."

	// MaxEventBytes is the largest event the log stream takes (its
	// MaxMsgSize). The embedded servers' max_payload is set above it.
	MaxEventBytes = 4 << 20
)

// Timeouts. They are short on purpose: with two of three nodes gone a
// publish must fail in about a second, and the caller answers a clear 503.
const (
	apiTimeout     = 2 * time.Second // one JetStream API request
	startTimeout   = 30 * time.Second
	appendAttempt  = 300 * time.Millisecond
	appendDeadline = time.Second
)

// Errors callers branch on.
var (
	// ErrNotLeased: this node does not hold the lease by its own clock
	// (Node.Leased); nothing was written.
	ErrNotLeased = errors.New("cluster: this node's lease has run out")
	// ErrFenced: an append was refused because the stream's last sequence
	// is not the one the caller expected — another node appended first
	// (this one lost the lease, or never held it). Nothing was written.
	ErrFenced = errors.New("cluster: log fenced: another node appended first")
	// ErrNoLeader: no node holds the lease (nobody took the request).
	ErrNoLeader = errors.New("cluster: no node holds the lease")
	// ErrNoAnswer: the holder took a forwarded request and did not answer
	// in time; it may have done it before it died.
	ErrNoAnswer = errors.New("cluster: the lease holder did not answer in time")
	// ErrBadRead: a file read from the object store did not hash to its
	// name; nothing of it may be kept. Reading it again may succeed.
	ErrBadRead = errors.New("cluster: the file read does not match its sha256")
	// ErrNoFile: the object store has no file with that sha256.
	ErrNoFile = errors.New("cluster: no such file")
)

// Config configures a node. main builds it from the cluster: block of the
// config file (config.Cluster).
type Config struct {
	// Node is this node's unique name: the embedded server's name, the
	// lease holder's value. Required.
	Node string
	// Replicas is the number of copies of the log stream, the lease bucket
	// and the object store when this node creates them. It is used only on
	// a clustered NATS; on a single NATS server it is 1. Zero means 3.
	Replicas int
	// LeaseTTL is the lease bucket's TTL: a holder that stops renewing
	// loses the lease this long after its last renewal. It renews every
	// LeaseTTL/3. Zero means 1.5 s.
	LeaseTTL time.Duration

	// URL, when set, connects to an existing NATS cluster
	// (nats://a:4222,nats://b:4222) instead of running an embedded server.
	URL string
	// Token and CredsFile authenticate to URL; empty means none.
	Token     string
	CredsFile string

	// Embedded configures the JetStream server run inside this process when
	// URL is empty.
	Embedded Embedded
}

// Embedded configures the in-process JetStream server.
type Embedded struct {
	// Listen is the client address (HOST:PORT) for the nats CLI; port 0
	// picks a free one. Set, it needs Secret. Empty: this node's own
	// connection is in-process and nobody else gets in: no client port at
	// all without Routes, and with Routes a loopback one that takes only
	// this process (see startEmbedded).
	Listen string
	// ClusterListen is the route address the other nodes dial. Used only
	// when Routes is not empty.
	ClusterListen string
	// Routes are the other nodes' ClusterListen as nats://host:port. Empty
	// runs a single NATS node: R1, with every write synced (SyncAlways).
	Routes []string
	// StoreDir is JetStream's directory. Required (main defaults it to
	// <data_dir>/nats).
	StoreDir string
	// Secret is required of every route (user "frontdesk") and every
	// client (as a token) of the embedded server; all nodes share it. At
	// least 16 characters. Required with Routes or Listen; empty is
	// allowed only for a node on its own with no client port, which
	// offers no port at all.
	Secret string
}

// routeUser is the route user name when Embedded.Secret is set.
const routeUser = "frontdesk"

func (c Config) withDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 1500 * time.Millisecond
	}
	return c
}

// Node is this process's member of the cluster. Its methods are safe for
// concurrent use from any goroutine.
type Node struct {
	cfg      Config
	log      *slog.Logger
	srv      *server.Server // nil when connected to URL
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   jetstream.Stream
	kv       jetstream.KeyValue
	files    jetstream.ObjectStore
	state    jetstream.KeyValue
	erased   jetstream.KeyValue
	auth     jetstream.KeyValue // credentials (hashes only), see auth.go
	replicas int
	epoch    string // tells this process's message ids from an earlier run's

	// holderUntil is when the lease of the holder this node last saw
	// renewing ends, by its clock; Campaign's goroutine only.
	holderUntil time.Time
	watch       *natsLog  // the embedded server's logger; nil with URL
	refusedAt   time.Time // Start: when a route first refused the secret

	mu       sync.Mutex
	leasedAt time.Time // when the last successful write of our lease was sent
	role     Role
	holder   string
	nodes    []string
	changed  chan struct{} // closed and replaced at each role change

	// compactReq asks compactLoop for a snapshot of this node's replica
	// (cap 1); stopCompact ends it and compactDone says it ended. The
	// loop runs only on an embedded clustered server.
	compactReq  chan struct{}
	stopCompact chan struct{}
	compactDone chan struct{}

	closeOnce sync.Once
}

// Start connects this node: it starts the embedded JetStream server (or
// connects to Config.URL), then binds the log stream, the lease bucket and
// the object store, creating each only when it is missing (creating needs
// the meta leader; binding does not). It waits at most until ctx ends or
// 30 s, whichever is first, and returns a clear error then. Close ends
// what Start started.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	n := &Node{cfg: cfg, log: logger, role: Electing, changed: make(chan struct{}), compactReq: make(chan struct{}, 1),
		epoch: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if err := n.connect(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.bind(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.settle(ctx); err != nil {
		n.Close()
		return nil, err
	}
	if n.watch != nil {
		n.watch.running()
	}
	if n.srv != nil && n.srv.JetStreamIsClustered() {
		n.stopCompact, n.compactDone = make(chan struct{}), make(chan struct{})
		go func() { defer close(n.compactDone); n.compactLoop(n.stopCompact) }()
	}
	return n, nil
}

func (c Config) check() error {
	if c.Node == "" {
		return errors.New("cluster: node name is empty")
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("cluster: replicas %d: use 1 to 5", c.Replicas)
	}
	if c.LeaseTTL < 300*time.Millisecond {
		return fmt.Errorf("cluster: lease TTL %v is too short; use at least 300ms", c.LeaseTTL)
	}
	if c.URL == "" && c.Embedded.StoreDir == "" {
		return errors.New("cluster: embedded NATS needs a store directory")
	}
	if s := c.Embedded.Secret; s != "" && len(s) < 16 {
		return fmt.Errorf("cluster: the embedded NATS secret is %d characters; use at least 16", len(s))
	}
	if c.URL == "" && c.Embedded.Secret == "" {
		if len(c.Embedded.Routes) > 0 {
			return errors.New("cluster: a node with routes needs a secret: set cluster.nats.embedded.secret_env to a variable holding it (the same on every node; make one with: openssl rand -hex 16)")
		}
		if c.Embedded.Listen != "" {
			return fmt.Errorf("cluster: cluster.nats.embedded.listen %s opens a NATS client port, which needs a secret: set cluster.nats.embedded.secret_env (or leave listen empty: the node needs no client port)", c.Embedded.Listen)
		}
	}
	return nil
}

// connect starts the embedded server or dials URL.
func (n *Node) connect(ctx context.Context) error {
	opts := []nats.Option{nats.Name("frontdesk " + n.cfg.Node), nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond)}
	if n.cfg.URL != "" {
		if n.cfg.Token != "" {
			opts = append(opts, nats.Token(n.cfg.Token))
		}
		if n.cfg.CredsFile != "" {
			opts = append(opts, nats.UserCredentials(n.cfg.CredsFile))
		}
		nc, err := nats.Connect(n.cfg.URL, opts...)
		if err != nil {
			return fmt.Errorf("cluster: connect to %s: %w", n.cfg.URL, err)
		}
		n.nc = nc
		n.replicas = 1
		if nc.ConnectedClusterName() != "" {
			n.replicas = n.cfg.Replicas
		}
		return nil
	}
	n.watch = newNATSLog(n.log)
	srv, token, err := startEmbedded(n.cfg, n.watch)
	if err != nil {
		return err
	}
	n.srv = srv
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		if err := n.startTrouble(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return errors.New("cluster: the embedded NATS server did not start in time")
		}
	}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect("", append(opts, nats.InProcessServer(srv))...)
	if err != nil {
		return fmt.Errorf("cluster: connect to the embedded NATS: %w", err)
	}
	n.nc = nc
	n.replicas = 1
	if srv.JetStreamIsClustered() {
		n.replicas = n.cfg.Replicas
	}
	return nil
}

// startEmbedded starts the in-process JetStream server, logging to w. It
// returns the token this node's own (in-process) connection presents.
//
// No client port takes a connection without a secret. With listen, the
// port wants Secret as its token (the nats CLI's way in). Without listen
// and without routes there is no client port at all (DontListen). Without
// listen but with routes there must be one: nats-server starts routing
// only once its client listener is up, which DontListen never brings up
// (2.15: StartRouting waits on clientListenReady). That port is on
// loopback, on a free port, and wants a random token only this process
// knows, so nobody else can use it, not even with the secret.
func startEmbedded(cfg Config, w *natsLog) (*server.Server, string, error) {
	e := cfg.Embedded
	opts := &server.Options{
		ServerName: cfg.Node,
		JetStream:  true,
		StoreDir:   e.StoreDir,
		MaxPayload: MaxEventBytes * 2,
		NoSigs:     true,
		NoLog:      true,
	}
	token := ""
	switch {
	case e.Listen != "":
		host, port, err := splitHostPort(e.Listen)
		if err != nil {
			return nil, "", fmt.Errorf("cluster: embedded listen: %w", err)
		}
		opts.Host, opts.Port, token = host, port, e.Secret
	case len(e.Routes) > 0:
		opts.Host, opts.Port, token = "127.0.0.1", server.RANDOM_PORT, rand.Text()+rand.Text()
	default:
		opts.DontListen = true
	}
	opts.Authorization = token
	if len(e.Routes) == 0 {
		// One NATS node: no other copy, so every write is synced as with
		// session.fsync: always.
		opts.SyncAlways = true
	} else {
		chost, cport, err := splitHostPort(e.ClusterListen)
		if err != nil {
			return nil, "", fmt.Errorf("cluster: embedded cluster_listen: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: ClusterName, Host: chost, Port: cport}
		if e.Secret != "" {
			opts.Cluster.Username, opts.Cluster.Password = routeUser, e.Secret
		}
		for _, r := range e.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return nil, "", fmt.Errorf("cluster: route %q is not nats://host:port", r)
			}
			if e.Secret != "" {
				u.User = url.UserPassword(routeUser, e.Secret)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: embedded NATS: %w", err)
	}
	srv.SetLogger(w, false, false)
	go srv.Start()
	return srv, token, nil
}

// splitHostPort parses HOST:PORT; port 0 becomes NATS's "pick a free one".
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// bind binds (or creates) the stream, the lease bucket and the object
// store, retrying while JetStream elects its meta leader.
func (n *Node) bind(ctx context.Context) error {
	js, err := jetstream.New(n.nc, jetstream.WithDefaultTimeout(apiTimeout))
	if err != nil {
		return fmt.Errorf("cluster: jetstream: %w", err)
	}
	n.js = js
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"log stream " + LogStream, n.bindStream},
		{"lease bucket " + LeaseBucket, n.bindLease},
		{"object store " + FilesBucket, n.bindFiles},
		{"state bucket " + StateBucket, n.bindState},
		{"erasure bucket " + ErasedBucket, n.bindErased},
		{"credentials bucket " + AuthBucket, n.bindAuth},
	}
	for _, s := range steps {
		var last error
		for {
			actx, cancel := n.attemptCtx(ctx)
			last = s.fn(actx)
			cancel()
			if last == nil {
				break
			}
			if err := n.startTrouble(); err != nil {
				return err
			}
			t := time.NewTimer(250 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("cluster: bind %s (is a quorum of the nodes up?): %w", s.what, last)
			case <-t.C:
			}
		}
	}
	return nil
}

// bindStream binds the log stream, creating it when missing. Deletes are
// allowed (an erased event's message is securely deleted, see Forget);
// purges are not. A stream made before erasure existed has DenyDelete set,
// which NATS never lets an update clear ("can not cancel deny message
// deletes"): Forget then says so, and Start logs it once.
func (n *Node) bindStream(ctx context.Context) error {
	s, err := n.js.Stream(ctx, LogStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = n.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        LogStream,
			Description: "frontdesk chat log: one event a message, stream seq = event seq",
			Subjects:    []string{LogSubject},
			Storage:     jetstream.FileStorage,
			Replicas:    n.replicas,
			DenyDelete:  false, // erased events are deleted (Forget)
			DenyPurge:   true,
			MaxMsgSize:  MaxEventBytes,
		})
	}
	if err != nil {
		return err
	}
	if s.CachedInfo().Config.DenyDelete {
		n.log.Warn(denyDeleteText, "stream", LogStream)
	}
	n.stream = s
	return nil
}

// denyDeleteText says why an erased message stays in an old stream.
const denyDeleteText = "cluster: the log stream was made before frontdesk erased messages (deny_delete set, which NATS cannot clear): " +
	"an erased message is erased from every node's files but stays in the stream's own store"

func (n *Node) bindLease(ctx context.Context) (err error) {
	// The bucket TTL, not a per-key TTL: per-key TTLs are whole seconds
	// and a plain Update drops them.
	n.kv, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: LeaseBucket,
		Description: "frontdesk lease: who runs the turns", TTL: n.cfg.LeaseTTL})
	return err
}

// bucket binds the KV bucket cfg names, creating it as cfg says (one value
// a key, on file, on the cluster's replicas) when it is missing.
func (n *Node) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := n.js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg.History, cfg.Storage, cfg.Replicas = 1, jetstream.FileStorage, n.replicas
		kv, err = n.js.CreateKeyValue(ctx, cfg)
	}
	return kv, err
}

func (n *Node) bindFiles(ctx context.Context) error {
	obs, err := n.js.ObjectStore(ctx, FilesBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = n.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      FilesBucket,
			Description: "frontdesk attachments by sha256",
			Storage:     jetstream.FileStorage,
			Replicas:    n.replicas,
		})
	}
	if err != nil {
		return err
	}
	n.files = obs
	return nil
}

// Name returns this node's name.
func (n *Node) Name() string { return n.cfg.Node }

// Replicas returns the number of copies this node asks for: Config.Replicas
// on a clustered NATS, 1 on a single server.
func (n *Node) Replicas() int { return n.replicas }

// ClientURL returns the embedded server's client URL, or "" when connected
// to Config.URL or when it has no client port (Embedded.Listen empty).
func (n *Node) ClientURL() string {
	if n.srv == nil || n.cfg.Embedded.Listen == "" {
		return ""
	}
	return n.srv.ClientURL()
}

// Close drains the connection and shuts the embedded server down. It is
// idempotent. Campaign, Follow and Serve calls should be ended (their ctx
// cancelled) first; those still running return errors.
func (n *Node) Close() {
	n.closeOnce.Do(func() {
		if n.stopCompact != nil {
			close(n.stopCompact)
			<-n.compactDone
		}
		if n.nc != nil {
			n.nc.Close()
		}
		if n.srv != nil {
			n.srv.Shutdown()
			n.srv.WaitForShutdown()
		}
	})
}
