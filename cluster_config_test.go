package main

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/config"
)

func TestClusterConfig(t *testing.T) {
	c := config.Defaults()
	c.DataDir = "/d"
	c.Cluster.Node = "a"
	c.Cluster.LeaseTTLMS = 2000
	c.Cluster.NATS.Embedded.Routes = []string{"nats://10.0.0.2:6222"}
	c.Cluster.NATS.Embedded.SecretEnv = "FD_SECRET"
	c.Resolve()
	env := map[string]string{"FD_SECRET": "0123456789abcdef"}
	got, err := clusterConfig(c.Cluster, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != "a" || got.Replicas != 3 || got.LeaseTTL != 2*time.Second ||
		got.Embedded.Secret != "0123456789abcdef" || got.Embedded.StoreDir != "/d/nats" ||
		got.Embedded.Listen != "127.0.0.1:4222" || len(got.Embedded.Routes) != 1 {
		t.Errorf("got %+v", got)
	}
	delete(env, "FD_SECRET")
	if _, err := clusterConfig(c.Cluster, func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), "secret_env") || !strings.Contains(err.Error(), "FD_SECRET") {
		t.Errorf("unset secret variable: got %v, want an error naming the key and the variable", err)
	}
}
