package console

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// TestSchedulesCommand lists schedules, cancels one by id, refuses an
// unknown id, and lists what is left.
func TestSchedulesCommand(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	quiet := slog.New(slog.DiscardHandler)
	m := hub.New(hub.Config{DataDir: dir, Logger: quiet}, lg, &testagent.Count{N: 1})
	sched, err := schedule.Open(m, schedule.Options{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hubDone, schedDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(hubDone); m.Run(ctx) }()
	go func() { defer close(schedDone); sched.Run(ctx) }()
	defer func() { cancel(); <-schedDone; <-hubDone }()

	keep, err := sched.Create(ctx, schedule.Spec{Content: "Reminder: water the plants", Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := sched.Create(ctx, schedule.Spec{Content: "Reminder: call the plumber", InSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	in := "/schedules\n/schedules cancel " + gone.ID + "\n/schedules cancel s-nope\n/schedules cancel\n/schedules\n"
	if err := Run(ctx, m, Options{Stdin: strings.NewReader(in), Stdout: &out, Schedules: sched}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	first, rest, _ := strings.Cut(got, "cancelled "+gone.ID)
	for _, want := range []string{keep.ID, "Reminder: water the plants", "[cron 0 9 * * 1-5 Europe/Berlin]", gone.ID, "Reminder: call the plumber"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first list lacks %q:\n%s", want, got)
		}
	}
	for _, want := range []string{`cancel failed: no schedule "s-nope"`, "usage: /schedules cancel <id>", keep.ID} {
		if !strings.Contains(rest, want) {
			t.Errorf("after the cancel, no %q:\n%s", want, got)
		}
	}
	if last := rest[strings.LastIndex(rest, "usage:"):]; strings.Contains(last, gone.ID) {
		t.Errorf("the cancelled schedule is still listed:\n%s", got)
	}
	list, _ := sched.List(ctx)
	if len(list) != 1 || list[0].ID != keep.ID {
		t.Fatalf("after the REPL: %+v", list)
	}
}
