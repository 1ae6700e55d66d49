package ws

import "context"

type revokedKey struct{}

// WithRevoked returns ctx carrying a channel closed when the credential a
// WebSocket was opened with stops working (package web watches it): the
// connection is then closed with 1008 "credential revoked".
func WithRevoked(ctx context.Context, revoked <-chan struct{}) context.Context {
	return context.WithValue(ctx, revokedKey{}, revoked)
}

// closeOnRevoke closes cn with 1008 when the request's credential is
// revoked, until ctx (the connection's lifetime) ends.
func (cn *conn) closeOnRevoke(ctx context.Context, reqCtx context.Context) {
	revoked, _ := reqCtx.Value(revokedKey{}).(<-chan struct{})
	if revoked == nil {
		return
	}
	go func() {
		select {
		case <-revoked:
			cn.h.close(cn.c, cn.raw, 1008, "credential revoked")
		case <-ctx.Done():
		}
	}()
}
