package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterDefaults(t *testing.T) {
	c := Defaults()
	if c.Cluster.Enabled() {
		t.Error("cluster mode is on by default")
	}
	k := c.Cluster
	if k.Replicas != 3 || k.LeaseTTLMS != 1500 || k.NATS.Embedded.Listen != "" ||
		k.NATS.Embedded.ClusterListen != "127.0.0.1:6222" || len(k.NATS.Embedded.Routes) != 0 {
		t.Errorf("defaults: got %+v", k)
	}
	c.DataDir = "d"
	c.Resolve()
	if got, want := c.Cluster.NATS.Embedded.StoreDir, filepath.Join("d", "nats"); got != want {
		t.Errorf("store_dir: got %q, want %q", got, want)
	}
}

func TestClusterDecodeAndValidate(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error; none: valid
	}{
		{"three nodes", "cluster:\n  node: a-1\n  nats:\n    embedded:\n      secret_env: FD_NATS_SECRET\n      cluster_listen: 10.0.0.1:6222\n      routes: [nats://10.0.0.2:6222, nats://10.0.0.3:6222]\n", nil},
		{"existing cluster", "cluster:\n  node: a\n  nats:\n    url: nats://a:4222,tls://b:4222\n    token_env: NATS_TOKEN\n", nil},
		{"one node, no port, no secret", "cluster:\n  node: a\n", nil},
		{"routes without a secret", "cluster:\n  node: a\n  nats:\n    embedded:\n      routes: [nats://127.0.0.1:6223]\n", []string{"cluster.nats.embedded.secret_env", "routes are set"}},
		{"routes without a secret, cluster off", "cluster:\n  nats:\n    embedded:\n      routes: [nats://10.0.0.2:6222]\n", nil},
		{"loopback client port without a secret", "cluster:\n  node: a\n  nats:\n    embedded:\n      listen: 127.0.0.1:4222\n", []string{"cluster.nats.embedded.secret_env", "client port"}},
		{"client port with a secret", "cluster:\n  node: a\n  nats:\n    embedded:\n      listen: 127.0.0.1:4222\n      secret_env: S\n", nil},
		{"bad node", "cluster:\n  node: \"a b\"\n", []string{"cluster.node", "letters"}},
		{"dotted node", "cluster:\n  node: a.b\n", []string{"cluster.node"}},
		{"replicas", "cluster:\n  replicas: 7\n", []string{"cluster.replicas", "1 to 5"}},
		{"lease", "cluster:\n  lease_ttl_ms: 100\n", []string{"cluster.lease_ttl_ms", "300 to 60000"}},
		{"url", "cluster:\n  nats:\n    url: http://x\n", []string{"cluster.nats.url", "nats://host:port"}},
		{"url and routes", "cluster:\n  nats:\n    url: nats://x:4222\n    embedded:\n      routes: [nats://y:6222]\n", []string{"cluster.nats.embedded.routes", "must be empty"}},
		{"route", "cluster:\n  nats:\n    embedded:\n      routes: [10.0.0.2:6222]\n", []string{"cluster.nats.embedded.routes[0]"}},
		{"listen", "cluster:\n  nats:\n    embedded:\n      listen: nohost\n", []string{"cluster.nats.embedded.listen"}},
		{"public url", "cluster:\n  node: a\n  public_url: https://a.example.com/desk/\n", nil},
		{"public url, port", "cluster:\n  node: a\n  public_url: http://127.0.0.1:8081\n", nil},
		{"public url, no scheme", "cluster:\n  public_url: a.example.com:8080\n", []string{"cluster.public_url", "http://"}},
		{"public url, relative", "cluster:\n  public_url: /desk\n", []string{"cluster.public_url", "absolute"}},
		{"public url, ftp", "cluster:\n  public_url: ftp://a.example.com\n", []string{"cluster.public_url", "http://"}},
		{"public url, fragment", "cluster:\n  public_url: http://a:8080/#x\n", []string{"cluster.public_url", "fragment"}},
		{"public url, password", "cluster:\n  public_url: http://u:p@a:8080\n", []string{"cluster.public_url", "password"}},
		{"unknown key", "cluster:\n  nats:\n    embeded: {}\n", []string{"line 3", `"cluster.nats.embeded"`, "embedded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			err := Decode([]byte(tt.yaml), &c)
			if err == nil {
				err = c.Validate()
			}
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one with %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
