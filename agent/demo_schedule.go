package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// remindPattern matches "remind me in N minutes to X" (also seconds and
// hours, "in 1 minute", "in 5 min", and "… that X" / "… about X").
var remindPattern = regexp.MustCompile(`(?is)\bremind\s+me\s+in\s+(\d{1,6})\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\s+(?:to|that|about)\s+(.+)`)

// reminder is a parsed "remind me in N … to X".
type reminder struct {
	seconds int64
	what    string // X
	delay   string // "1 minute"
}

func parseReminder(content string) (reminder, bool) {
	m := remindPattern.FindStringSubmatch(content)
	if m == nil {
		return reminder{}, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n < 1 {
		return reminder{}, false
	}
	unit, mult := "second", int64(1)
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "m"):
		unit, mult = "minute", 60
	case strings.HasPrefix(u, "h"):
		unit, mult = "hour", 3600
	}
	what := strings.TrimRight(strings.TrimSpace(m[3]), ".!?")
	if what == "" {
		return reminder{}, false
	}
	return reminder{seconds: n * mult, what: what, delay: fmt.Sprintf("%d %s", n, plural(int(n), unit, unit+"s"))}, true
}

// remind schedules the reminder with the schedule_create tool, the way a
// model would: a tool_call, its tool_result, then a reply from it.
func (d *Demo) remind(ctx context.Context, req Request, r reminder, emit Emitter) (string, error) {
	create := findTool(req.Tools, "schedule_create")
	if create == nil {
		return fmt.Sprintf("I cannot schedule anything right now, so I cannot remind you to %s.", r.what), nil
	}
	args, _ := json.Marshal(map[string]any{"content": "Reminder: " + r.what, "in_seconds": r.seconds})
	out, err := callTool(ctx, req.Turn, create, args, emit)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("I tried to schedule the reminder, but it failed: %v.", err), nil
	}
	var made struct {
		ID      string `json:"id"`
		NextRun string `json:"next_run"`
		TZ      string `json:"tz"`
	}
	_ = json.Unmarshal([]byte(out), &made)
	return fmt.Sprintf("Done: in %s (at %s) I will remind you to %s. Every connected client will see it. (schedule %s)",
		r.delay, wallClock(made.NextRun, made.TZ), r.what, made.ID), nil
}

// wallClock shows an RFC 3339 time the tool gave as a person reads it,
// in the schedule's zone ("Mon 23 Nov 15:01 CET"), the way a late
// reminder names its time; what does not parse is shown as it came.
func wallClock(rfc3339, tz string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return rfc3339
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	}
	return t.Format(TimeFormat)
}

// scheduledReply answers an input a schedule fired.
func scheduledReply(content string) string {
	return fmt.Sprintf("⏰ %s — this is the reminder you scheduled. (I am the offline demo assistant: a real model would act on it.)",
		strings.Join(strings.Fields(content), " "))
}
