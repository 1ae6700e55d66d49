package clusterhub

import (
	"fmt"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/config"
)

// FromConfig is the cluster: block as package cluster takes it.
func FromConfig(cfg config.Config, getenv func(string) string) cluster.Config {
	c := cfg.Cluster
	cc := cluster.Config{Node: c.Node, Replicas: c.Replicas, LeaseTTL: time.Duration(c.LeaseTTLMS) * time.Millisecond,
		URL: c.NATS.URL,
		Embedded: cluster.Embedded{Listen: c.NATS.Embedded.Listen, ClusterListen: c.NATS.Embedded.ClusterListen,
			Routes: c.NATS.Embedded.Routes, StoreDir: c.NATS.Embedded.StoreDir}}
	if c.NATS.TokenEnv != "" {
		cc.Token = getenv(c.NATS.TokenEnv)
	}
	if c.NATS.CredsEnv != "" {
		cc.CredsFile = getenv(c.NATS.CredsEnv)
	}
	if c.NATS.Embedded.SecretEnv != "" {
		cc.Embedded.Secret = getenv(c.NATS.Embedded.SecretEnv)
	}
	return cc
}

// CheckSecret checks that the variable cluster.nats.embedded.secret_env
// names holds the secret (at start and in check-config).
func CheckSecret(cfg config.Config, getenv func(string) string) error {
	if e := cfg.Cluster.NATS.Embedded.SecretEnv; e != "" && cfg.Cluster.NATS.URL == "" && getenv(e) == "" {
		return fmt.Errorf("cluster.nats.embedded.secret_env: the environment variable %s is empty or unset", e)
	}
	return nil
}

// OnItsOwn is the start-up banner's warning for a cluster node with its
// embedded NATS and no routes: it forms a one-node desk of its own, which
// the other nodes (whose routes may still list it) do not reach. "" for
// any other node.
func OnItsOwn(cfg config.Config) string {
	c := cfg.Cluster
	if !c.Enabled() || c.NATS.URL != "" || len(c.NATS.Embedded.Routes) > 0 {
		return ""
	}
	return fmt.Sprintf("cluster node %s is on its own: no routes (cluster.nats.embedded.routes), so this is a one-node desk of its own that other nodes do not reach", c.Node)
}
