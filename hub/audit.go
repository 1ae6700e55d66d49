package hub

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/frontdesk-hq/frontdesk/event"
)

// opAudit forwards a person_changed event to the holder: on a cluster
// only the holder appends to the log.
const opAudit = "audit"

type (
	auditCmd struct {
		d     event.PersonChangedData
		reply chan error
	}
)

// RecordPersonChange appends a person_changed event (the audit trail of
// people, roles and credentials; never a secret) to the chat log. On a
// cluster node that does not hold the lease it is forwarded to the
// holder.
func (m *SessionManager) RecordPersonChange(ctx context.Context, d event.PersonChangedData) error {
	if d.Action == "" || d.Person == "" {
		return &InputError{"bad_request", "a person change names an action and a person"}
	}
	if m.following() {
		var ok bool
		return m.forward(ctx, opAudit, d, &ok)
	}
	reply := make(chan error, 1)
	err, cerr := call(ctx, m, auditCmd{d: d, reply: reply}, reply)
	return errors.Join(cerr, err)
}

// audit runs on the session goroutine.
func (m *SessionManager) audit(c auditCmd) error {
	if m.following() {
		return ErrNoLeader
	}
	if err := m.publish(event.New(event.PersonChanged, "", m.now(), c.d)); err != nil {
		return storageErr("record person_changed", err)
	}
	return nil
}

// serveAudit runs a forwarded RecordPersonChange on the holder.
func (m *SessionManager) serveAudit(ctx context.Context, req []byte) (any, error) {
	var d event.PersonChangedData
	if err := json.Unmarshal(req, &d); err != nil {
		return nil, err
	}
	if d.Action == "" || d.Person == "" {
		return nil, &InputError{"bad_request", "a person change names an action and a person"}
	}
	reply := make(chan error, 1)
	err, cerr := call(ctx, m, auditCmd{d: d, reply: reply}, reply)
	if err = errors.Join(cerr, err); err != nil {
		return nil, err
	}
	return true, nil
}
