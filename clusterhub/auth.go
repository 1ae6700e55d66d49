package clusterhub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/cluster"
)

// AuthKV is the credentials' Backend on a cluster node: the replicated
// bucket cluster.AuthBucket, one key a credential ("c.<id>"), so what
// must agree (a revocation) is in the replicated state, not in one
// node's files. Watch keeps a Store in step with the other nodes.
type AuthKV struct {
	Node    *cluster.Node
	Timeout time.Duration // each call's; 0: 5 s
}

var _ auth.MetaBackend = AuthKV{}

func (k AuthKV) ctx() (context.Context, context.CancelFunc) {
	t := k.Timeout
	if t == 0 {
		t = 5 * time.Second
	}
	return context.WithTimeout(context.Background(), t)
}

// Load implements auth.Backend.
func (k AuthKV) Load() ([]auth.Credential, error) {
	ctx, cancel := k.ctx()
	defer cancel()
	all, err := k.Node.AuthAll(ctx)
	if err != nil {
		return nil, err
	}
	var out []auth.Credential
	for key, v := range all {
		if !strings.HasPrefix(key, "c.") {
			continue
		}
		var c auth.Credential
		if err := json.Unmarshal(v, &c); err != nil {
			return nil, fmt.Errorf("credential %s in %s is damaged: %w", key, cluster.AuthBucket, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Put implements auth.Backend.
func (k AuthKV) Put(c auth.Credential) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ctx, cancel := k.ctx()
	defer cancel()
	return k.Node.AuthPut(ctx, "c."+c.ID, b)
}

// Delete implements auth.Backend.
func (k AuthKV) Delete(id string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	return k.Node.AuthDelete(ctx, "c."+id)
}

// LoadMeta implements auth.MetaBackend.
func (k AuthKV) LoadMeta() (auth.Meta, error) {
	ctx, cancel := k.ctx()
	defer cancel()
	var m auth.Meta
	b, err := k.Node.AuthGet(ctx, cluster.AuthMetaKey)
	if err != nil || b == nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s in %s is damaged: %w", cluster.AuthMetaKey, cluster.AuthBucket, err)
	}
	return m, nil
}

// SaveMeta implements auth.MetaBackend.
func (k AuthKV) SaveMeta(m auth.Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ctx, cancel := k.ctx()
	defer cancel()
	return k.Node.AuthPut(ctx, cluster.AuthMetaKey, b)
}

// WatchAuth applies to s every change another node (or this one) makes to
// the bucket, until ctx ends: a revoked credential stops working here as
// soon as the watch delivers it. The watch starts with the bucket's
// present keys, so what changed between s's Load and the watch is
// applied too (a credential deleted meanwhile is dropped).
func WatchAuth(ctx context.Context, n *cluster.Node, s *auth.Store) error {
	apply := func(key string, value []byte) {
		id := strings.TrimPrefix(key, "c.")
		if value == nil {
			s.Apply(auth.Credential{}, id)
			return
		}
		var c auth.Credential
		if json.Unmarshal(value, &c) == nil && c.Hash != "" {
			s.Apply(c, "")
		}
	}
	synced := func(keys map[string]bool) {
		for _, c := range s.List("") {
			if !keys["c."+c.ID] {
				s.Apply(auth.Credential{}, c.ID)
			}
		}
	}
	return n.WatchAuth(ctx, apply, synced)
}
