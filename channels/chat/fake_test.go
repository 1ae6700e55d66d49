package chat_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// fake is a Connector whose platform is a few slices: the messages the
// test hands in, and what the door posted and edited.
type fake struct {
	in      chan any // chat.Message or chat.Action
	handled chan error
	limits  chat.Limits

	mu      sync.Mutex
	msgs    map[string]string // id → current plain text
	posts   []chat.Post
	edits   []chat.Edit
	cursor  string
	next    int
	failNow int // Send and Edit fail this many times more with a RetryError
}

func newFake(max int) *fake {
	return &fake{in: make(chan any), handled: make(chan error, 16), msgs: map[string]string{},
		limits: chat.Limits{MaxText: max, EditEvery: 20 * time.Millisecond, Style: chat.StylePlain}}
}

func (f *fake) Limits() chat.Limits { return f.limits }

func (f *fake) Run(ctx context.Context, in chat.Inbox) error {
	f.mu.Lock()
	f.cursor = in.Cursor()
	f.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case x := <-f.in:
			switch x := x.(type) {
			case chat.Message:
				err := in.Message(ctx, x)
				if err == nil {
					err = in.Advance(x.ID)
				}
				f.handled <- err
			case chat.Action:
				in.Action(ctx, x)
				f.handled <- nil
			}
		}
	}
}

func (f *fake) fail() error {
	if f.failNow > 0 {
		f.failNow--
		return &chat.RetryError{After: 10 * time.Millisecond, Err: fmt.Errorf("429 too many requests")}
	}
	return nil
}

func (f *fake) Send(ctx context.Context, p chat.Post) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return "", err
	}
	f.next++
	id := fmt.Sprint("m", f.next)
	f.msgs[id] = p.Plain
	f.posts = append(f.posts, p)
	return id, nil
}

func (f *fake) Edit(ctx context.Context, e chat.Edit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return err
	}
	if _, ok := f.msgs[e.ID]; !ok {
		return fmt.Errorf("no message %s", e.ID)
	}
	f.msgs[e.ID] = e.Plain
	f.edits = append(f.edits, e)
	return nil
}

func (f *fake) Typing(ctx context.Context, chat string) error { return nil }

// snapshot returns copies of the posts and the texts by id.
func (f *fake) snapshot() ([]chat.Post, map[string]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	texts := map[string]string{}
	for k, v := range f.msgs {
		texts[k] = v
	}
	return append([]chat.Post(nil), f.posts...), texts, len(f.edits)
}
