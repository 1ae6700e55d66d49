package telegram_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/telegram"
	"github.com/frontdesk-hq/frontdesk/event"
)

// streamer writes its reply in two pieces: the first words at once, the
// rest a moment later (a model's next tokens).
type streamer struct{ rest time.Duration }

func (s streamer) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Delta, event.TextData{Text: "first words "})
	select {
	case <-time.After(s.rest):
	case <-ctx.Done():
		return agent.Reply{}, ctx.Err()
	}
	return agent.Reply{Content: "first words and the rest of " + req.Content}, nil
}

// BenchmarkRoundTrip: a message on the fake Bot API → the first streamed
// words posted (sendMessage) → the final edit with the exact reply, over
// the real Door and session. The long poll, the Door's edit throttle
// (Telegram's 1 s by default) and the HTTP calls are all in it; the
// agent takes 5 ms between its first words and the rest, as the web
// door's BenchmarkRoundTrip (channels/ws) does.
func BenchmarkRoundTrip(b *testing.B) {
	for _, every := range []time.Duration{time.Second, 50 * time.Millisecond} {
		b.Run(fmt.Sprintf("edit_every=%v", every), func(b *testing.B) {
			r := newRig(b, rigOptions{agent: streamer{rest: 5 * time.Millisecond},
				conn: func(o *telegram.Options) { o.EditEvery = every }})
			r.start(b)
			var first, final []time.Duration
			b.ResetTimer()
			for i := range b.N {
				text := fmt.Sprint("question ", i)
				t0 := time.Now()
				id := r.f.Message(annChat, ann, text, nil)
				r.f.WaitFor(b, "the first words", func() bool { _, ok := r.f.ReplyTo(id); return ok })
				first = append(first, time.Since(t0))
				want := "first words and the rest of " + text
				r.f.WaitFor(b, "the final edit", func() bool { m, _ := r.f.ReplyTo(id); return m.Text == want })
				final = append(final, time.Since(t0))
			}
			b.StopTimer()
			report(b, "first", first)
			report(b, "final", final)
		})
	}
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(ms(0.5), name+"-p50-ms")
	b.ReportMetric(ms(0.95), name+"-p95-ms")
}
