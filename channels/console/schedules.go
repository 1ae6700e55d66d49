package console

import (
	"context"
	"fmt"
	"strings"

	"github.com/frontdesk-hq/frontdesk/schedule"
)

// Schedules is the part of the scheduler the REPL uses.
type Schedules interface {
	List(ctx context.Context) ([]schedule.Schedule, error)
	Cancel(ctx context.Context, id string) (schedule.Schedule, error)
}

var _ Schedules = (*schedule.Scheduler)(nil)

// schedules runs /schedules (list) and /schedules cancel <id>.
func (r *repl) schedules(ctx context.Context, arg string) {
	if r.sched == nil {
		r.p.say("schedules are not available")
		return
	}
	if id, ok := strings.CutPrefix(arg, "cancel"); ok && (id == "" || id[0] == ' ') {
		id = strings.TrimSpace(id)
		if id == "" {
			r.p.say("usage: /schedules cancel <id>")
			return
		}
		sc, err := r.sched.Cancel(ctx, id)
		if err != nil {
			r.p.say("cancel failed: " + err.Error())
			return
		}
		r.p.say(fmt.Sprintf("cancelled %s (%s)", sc.ID, oneLine(sc.Content)))
		return
	}
	if arg != "" {
		r.p.say("usage: /schedules, or /schedules cancel <id>")
		return
	}
	list, err := r.sched.List(ctx)
	if err != nil {
		r.p.say("schedules failed: " + err.Error())
		return
	}
	if len(list) == 0 {
		r.p.say("nothing is scheduled (ask the assistant: \"remind me in 10 minutes to …\")")
		return
	}
	var b strings.Builder
	for i, sc := range list {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s  %-24s  %s  %s", sc.ID, when(sc), oneLine(sc.Content), repeat(sc))
	}
	r.p.say(b.String())
}

// when is a schedule's next run in the server's local time.
func when(sc schedule.Schedule) string {
	switch {
	case sc.NextRun != nil:
		return sc.NextRun.Local().Format("Mon 2 Jan 15:04 MST")
	case sc.Firing != nil:
		return "running now"
	}
	return "never again"
}

func repeat(sc schedule.Schedule) string {
	s := ""
	if sc.Cron != "" {
		s = fmt.Sprintf("[cron %s %s]", sc.Cron, sc.TZ)
	}
	if sc.Notify != "" && sc.Notify != schedule.NotifyNone {
		s += " [notify " + sc.Notify + "]"
	}
	return strings.TrimSpace(s)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
