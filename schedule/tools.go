package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
)

// Values of created_by besides a channel's name: schedules the agent made
// with its schedule_create tool, and those made through POST
// /api/schedules.
const (
	CreatedByAgent = "agent"
	CreatedByAPI   = "api"
)

// toolView is how the tools show a schedule to the model: times in the
// schedule's own zone, which is what the person said.
type toolView struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Cron    string `json:"cron,omitempty"`
	TZ      string `json:"tz"`
	NextRun string `json:"next_run,omitempty"`
	LastRun string `json:"last_run,omitempty"`
	Notify  string `json:"notify"`
}

func view(sc Schedule) toolView {
	loc := sc.loc
	if loc == nil {
		loc = time.UTC
	}
	v := toolView{ID: sc.ID, Content: sc.Content, Cron: sc.Cron, TZ: sc.TZ, Notify: sc.Notify}
	if sc.NextRun != nil {
		v.NextRun = sc.NextRun.In(loc).Format(time.RFC3339)
	}
	if sc.LastRun != nil {
		v.LastRun = sc.LastRun.In(loc).Format(time.RFC3339)
	}
	return v
}

// Tools returns schedule_create, schedule_list and schedule_cancel for
// one turn. The create tool's description carries the current time, so
// a model can turn "on Friday at 9" into a date. Call it as a turn
// starts (hub.Config.Tools); it does not block.
func (s *Scheduler) Tools() []agent.Tool {
	now := s.opts.Clock.Now().In(s.opts.TZ)
	return []agent.Tool{
		{
			Name: "schedule_create",
			Description: "Schedule a message to yourself: at the given time the content enters this conversation as a new input " +
				"(channel \"schedule\"), every client sees it and your reply. Use it for \"remind me …\" and recurring tasks. " +
				"Give exactly one of: in_seconds (a delay), at (a time: RFC 3339, or a local time like 2026-11-27T09:00 read in tz), " +
				"or cron (five fields: minute hour day-of-month month day-of-week, e.g. \"0 8 * * 1-5\" for weekdays at 8:00). " +
				"Write content as the instruction you will get then, e.g. \"Reminder: call the plumber\". " +
				fmt.Sprintf("It is now %s (zone %s, the default tz).", now.Format("Monday 2 January 2006 15:04 MST"), s.opts.TZ),
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"content":{"type":"string","description":"the input to receive when it fires"},` +
				`"in_seconds":{"type":"integer","minimum":1},` +
				`"at":{"type":"string","description":"RFC 3339, or local YYYY-MM-DDTHH:MM in tz"},` +
				`"cron":{"type":"string","description":"five-field cron expression"},` +
				`"tz":{"type":"string","description":"IANA zone, e.g. Europe/Berlin"},` +
				`"notify":{"type":"string","enum":["none","email","auto"],"description":"email: also mail the reply; auto: mail it only if no client is connected"}` +
				`},"required":["content"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				var sp Spec
				if err := strictjson.Unmarshal(args, &sp); err != nil {
					return "", fmt.Errorf("arguments: %w", err)
				}
				sp.CreatedBy = CreatedByAgent
				sp.Person = hub.TurnPerson(ctx)
				sc, err := s.Create(ctx, sp)
				if err != nil {
					return "", err
				}
				return toolJSON(view(sc))
			},
		},
		{
			Name:        "schedule_list",
			Description: "List the scheduled messages (reminders and recurring tasks) with their ids and next run times.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
				list, err := s.List(ctx)
				if err != nil {
					return "", err
				}
				out := make([]toolView, 0, len(list))
				for _, sc := range list {
					out = append(out, view(sc))
				}
				return toolJSON(map[string]any{"schedules": out})
			},
		},
		{
			Name:        "schedule_cancel",
			Description: "Cancel a scheduled message by its id (see schedule_list).",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				var a struct {
					ID string `json:"id"`
				}
				if err := strictjson.Unmarshal(args, &a); err != nil {
					return "", fmt.Errorf("arguments: %w", err)
				}
				sc, err := s.Cancel(ctx, a.ID)
				if err != nil {
					return "", err
				}
				return toolJSON(map[string]any{"cancelled": view(sc)})
			},
		},
	}
}

func toolJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
