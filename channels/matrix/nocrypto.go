//go:build !goolm

package matrix

import (
	"context"
	"errors"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// errNoTag is New's error in a build without the goolm tag.
var errNoTag = errors.New("matrix: built without -tags goolm: the Matrix door needs it")

// Connector is the Matrix connector; in this build it cannot be made.
type Connector struct{}

var _ chat.Connector = (*Connector)(nil)

// New fails: this build has no Matrix crypto (build with -tags goolm).
func New(Options) (*Connector, error) { return nil, errNoTag }

// Run fails at once; see New.
func (c *Connector) Run(context.Context, chat.Inbox) error { return errNoTag }

// Send fails; see New.
func (c *Connector) Send(context.Context, chat.Post) (string, error) { return "", errNoTag }

// Edit fails; see New.
func (c *Connector) Edit(context.Context, chat.Edit) error { return errNoTag }

// Typing fails; see New.
func (c *Connector) Typing(context.Context, string) error { return errNoTag }

// Limits are Matrix's.
func (c *Connector) Limits() chat.Limits {
	return chat.Limits{MaxText: maxText, EditEvery: editEvery, TypingEvery: typingEvery, Style: chat.StyleHTML}
}

// Close does nothing.
func (c *Connector) Close() error { return nil }
