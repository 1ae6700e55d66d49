package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// AuthBucket is the KV bucket of credentials (hashes only, never a
// secret): key "c.<id>" holds one credential's JSON, key AuthMetaKey what
// is kept beside them (the people last recorded). Every node watches it,
// so a revocation on one node stops the credential on all.
const AuthBucket = "FRONTDESK_AUTH"

// AuthMetaKey is the key of the credentials' metadata in AuthBucket.
const AuthMetaKey = "meta"

func (n *Node) bindAuth(ctx context.Context) (err error) {
	n.auth, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: AuthBucket,
		Description: "frontdesk credentials: hashes of tokens, sessions, login links"})
	return err
}

// AuthAll returns every key of AuthBucket with its value.
func (n *Node) AuthAll(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	lister, err := n.auth.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: list credentials: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	for k := range lister.Keys() {
		e, err := n.auth.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: get credential %s: %w", k, err)
		}
		out[k] = e.Value()
	}
	return out, nil
}

// AuthGet returns key's value (nil, nil when missing).
func (n *Node) AuthGet(ctx context.Context, key string) ([]byte, error) {
	e, err := n.auth.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: get %s: %w", key, err)
	}
	return e.Value(), nil
}

// AuthPut stores value under key.
func (n *Node) AuthPut(ctx context.Context, key string, value []byte) error {
	if _, err := n.auth.Put(ctx, key, value); err != nil {
		return fmt.Errorf("cluster: put %s: %w", key, err)
	}
	return nil
}

// AuthDelete deletes key (purging its value: a deleted credential's hash
// does not stay in the bucket's history).
func (n *Node) AuthDelete(ctx context.Context, key string) error {
	if err := n.auth.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("cluster: delete %s: %w", key, err)
	}
	return nil
}

// WatchAuth calls fn, on WatchAuth's goroutine, for each credential key
// in the bucket now and then for each one put or deleted, by any node,
// until ctx ends (nil then); value is nil for a deletion. Once the keys
// there now have been given, synced is called with them: a caller that
// loaded the bucket before drops what was deleted in between.
func (n *Node) WatchAuth(ctx context.Context, fn func(key string, value []byte), synced func(keys map[string]bool)) error {
	w, err := n.auth.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("cluster: watch credentials: %w", err)
	}
	defer func() { _ = w.Stop() }()
	keys := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok && ctx.Err() == nil:
				return fmt.Errorf("cluster: watch credentials: the watch ended")
			case !ok:
				return nil
			case e == nil: // the keys there now have all been given
				if keys != nil {
					synced(keys)
					keys = nil
				}
			case strings.HasPrefix(e.Key(), "c."):
				if e.Operation() != jetstream.KeyValuePut {
					fn(e.Key(), nil)
					continue
				}
				if keys != nil {
					keys[e.Key()] = true
				}
				fn(e.Key(), e.Value())
			}
		}
	}
}
