package console

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// TestEraseCommand: /history shows each message's #seq; /erase <seq>
// erases it (the erased event shows as "#seq message erased (by console)"
// and /history then shows that in its place); a seq that is no message, one
// already erased, an unknown one and a bad one are refused with a sentence.
func TestEraseCommand(t *testing.T) {
	m := memoryHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	out := make(chan hub.TurnOutcome, 1)
	res, err := m.Submit(ctx, hub.Input{Channel: event.ChannelWebhook, Content: "the wifi password is quokkablue", Done: out})
	if err != nil {
		t.Fatal(err)
	}
	<-out
	seq := res.Echo.Event.Seq
	var buf syncBuffer
	in := fmt.Sprintf("/history\n/erase %d\n/history\n/erase %d\n/erase %d\n/erase 99999\n/erase x\n", seq, seq, seq+2)
	if err := Run(ctx, m, Options{Stdin: strings.NewReader(in), Stdout: &buf}); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	before, after, ok := strings.Cut(got, fmt.Sprintf("erased #%d", seq))
	if !ok {
		t.Fatalf("no erase confirmation:\n%s", got)
	}
	if !strings.Contains(before, fmt.Sprintf("#%d [webhook] the wifi password is quokkablue", seq)) {
		t.Errorf("/history does not show the message with its #seq:\n%s", got)
	}
	for _, want := range []string{
		"backups made before still hold it",
		fmt.Sprintf("#%d message erased (by console)", seq),
		fmt.Sprintf("erase #%d failed: the message at that seq is already erased", seq),
		fmt.Sprintf("erase #%d failed: the event at that seq is not a user or assistant message", seq+2),
		"erase #99999 failed: no event has that seq",
		"usage: /erase <seq>",
	} {
		if !strings.Contains(after, want) {
			t.Errorf("after the erase, no %q:\n%s", want, got)
		}
	}
	if strings.Contains(after, "quokkablue") {
		t.Errorf("the erased text is still shown after the erase:\n%s", after)
	}
}
