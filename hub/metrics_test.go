package hub

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

// streamSearchAgent streams one delta, calls history_search, and replies.
type streamSearchAgent struct{}

func (streamSearchAgent) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Delta, event.TextData{Text: "looking "})
	for _, tool := range req.Tools {
		if tool.Name == "history_search" {
			args, _ := json.Marshal(map[string]any{"query": req.Content})
			if _, err := tool.Call(ctx, args); err != nil {
				return agent.Reply{}, err
			}
		}
	}
	return agent.Reply{Content: "done"}, nil
}

func TestMetricsObserveTurnsLogAndSearch(t *testing.T) {
	dir := t.TempDir()
	h := startHub(t, Config{DataDir: dir, Index: startIndex(t, dir)}, streamSearchAgent{})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "where is the boat")
	if _, err := h.Search(ctxT(t), "boat", 5); err != nil {
		t.Fatal(err)
	}
	text := testmetrics.Scrape(t, h.Collectors()...)
	for series, want := range map[string]float64{
		`frontdesk_turn_duration_seconds_count{status="completed"}`: 1,
		`frontdesk_turn_duration_seconds_count{status="error"}`:     0,
		`frontdesk_turn_first_token_seconds_count`:                  1,
		// user, assistant, turn_end: deltas are not logged
		`frontdesk_chat_log_append_duration_seconds_count`:         3,
		`frontdesk_search_duration_seconds_count{caller="tool"}`:   1,
		`frontdesk_search_duration_seconds_count{caller="client"}`: 1,
		`frontdesk_storage_errors_total{op="append"}`:              0,
	} {
		if got := testmetrics.Must(t, text, series); got != want {
			t.Errorf("%s = %g, want %g", series, got, want)
		}
	}
}

func TestMetricsCountStorageErrors(t *testing.T) {
	h := startHubWithLog(t, Config{DataDir: t.TempDir()}, testagent.NewGate(), failLog{})
	for range 2 {
		if _, err := h.Submit(ctxT(t), Input{Channel: "web", Content: "hi"}); err == nil {
			t.Fatal("Submit succeeded with a failing chat log")
		}
	}
	text := testmetrics.Scrape(t, h.Collectors()...)
	if got := testmetrics.Must(t, text, `frontdesk_storage_errors_total{op="append"}`); got != 2 {
		t.Fatalf("append errors = %g, want 2", got)
	}
	if got := testmetrics.Must(t, text, `frontdesk_chat_log_append_duration_seconds_count`); got != 2 {
		t.Fatalf("appends timed = %g, want 2 (failed ones included)", got)
	}
}

func TestMetricsGaugeWaitingInputs(t *testing.T) {
	rec := newRecorder()
	h := startHub(t, Config{}, rec)
	submit(t, h, "running", "a")
	rec.ran(t)
	waiting := func() float64 {
		return testmetrics.Must(t, testmetrics.Scrape(t, h.Collectors()...), `frontdesk_inputs_waiting`)
	}
	for i, id := range []string{"m1", "m2"} {
		if _, err := h.Submit(ctxT(t), Input{Channel: event.ChannelEmail, Content: "mail", ClientMsgID: id, Patient: true}); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != float64(i+1) {
			t.Fatalf("after %d queued: frontdesk_inputs_waiting = %g", i+1, got)
		}
	}
	rec.release <- struct{}{}
	rec.ran(t) // m1 started
	if got := waiting(); got != 1 {
		t.Fatalf("after one started: frontdesk_inputs_waiting = %g, want 1", got)
	}
}
