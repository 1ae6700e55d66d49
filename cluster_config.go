package main

import (
	"fmt"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/config"
)

// clusterConfig turns the cluster: block (resolved: store_dir filled) into
// the cluster package's Config, reading the secrets its *_env keys name.
// A key naming a variable that is empty or unset is an error that says so.
func clusterConfig(c config.Cluster, getenv func(string) string) (cluster.Config, error) {
	env := func(key, name string) (string, error) {
		if name == "" {
			return "", nil
		}
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("%s: the environment variable %s is empty or unset", key, name)
		}
		return v, nil
	}
	out := cluster.Config{
		Node:     c.Node,
		Replicas: c.Replicas,
		LeaseTTL: time.Duration(c.LeaseTTLMS) * time.Millisecond,
		URL:      c.NATS.URL,
		Embedded: cluster.Embedded{
			Listen:        c.NATS.Embedded.Listen,
			ClusterListen: c.NATS.Embedded.ClusterListen,
			Routes:        c.NATS.Embedded.Routes,
			StoreDir:      c.NATS.Embedded.StoreDir,
		},
	}
	var err error
	if out.Token, err = env("cluster.nats.token_env", c.NATS.TokenEnv); err != nil {
		return out, err
	}
	if out.CredsFile, err = env("cluster.nats.creds_env", c.NATS.CredsEnv); err != nil {
		return out, err
	}
	if out.Embedded.Secret, err = env("cluster.nats.embedded.secret_env", c.NATS.Embedded.SecretEnv); err != nil {
		return out, err
	}
	return out, nil
}
