package web

import (
	"context"
	"errors"
	"mime"
	"net/http"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// Schedules is the part of the scheduler the API uses.
type Schedules interface {
	Create(ctx context.Context, sp schedule.Spec) (schedule.Schedule, error)
	List(ctx context.Context) ([]schedule.Schedule, error)
	Cancel(ctx context.Context, id string) (schedule.Schedule, error)
	// Damage is what a damaged schedules.json cost at start, or nil.
	Damage() *schedule.Damage
}

var _ Schedules = (*schedule.Scheduler)(nil)

// maxScheduleBody bounds POST /api/schedules: the content (up to
// schedules.max_content_bytes, checked by the scheduler) and a few fields.
const maxScheduleBody = 1 << 20

// scheduleRoutes mounts /api/schedules on api.
func scheduleRoutes(api *http.ServeMux, s Schedules, dir *people.Directory) {
	h := scheduleHandlers{s, dir}
	api.Handle("POST /api/schedules", apiFunc(h.create))
	api.Handle("GET /api/schedules", apiFunc(h.list))
	api.Handle("DELETE /api/schedules/{id}", apiFunc(h.cancel))
}

type scheduleHandlers struct {
	s   Schedules
	dir *people.Directory // nil: no Gate (everyone may)
}

// allow checks that r's person may change schedules (PermSchedules).
func (h scheduleHandlers) allow(r *http.Request) (hub.Actor, error) {
	a := actor(r, hub.CancelByAPI)
	if h.dir == nil {
		return a, nil
	}
	return a, httpjson.FromSession(h.dir.Allow(a, event.PermSchedules))
}

func (h scheduleHandlers) create(w http.ResponseWriter, r *http.Request) error {
	// JSON only, as on /api/messages: a form post from another site cannot
	// make a schedule even where no Origin header is sent.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return httpjson.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as Content-Type: application/json")
	}
	b, err := httpjson.ReadBody(w, r, maxScheduleBody, "1 MiB")
	if err != nil {
		return err
	}
	var sp schedule.Spec
	if err := strictjson.Unmarshal(b, &sp); err != nil {
		return httpjson.Errorf(http.StatusBadRequest, "bad_json",
			`send {"content":"…","at":"2026-11-27T09:00:00+01:00"} or {"content":"…","cron":"0 8 * * 1-5","tz":"Europe/Berlin"}: `+err.Error())
	}
	// Made through the HTTP API, not typed in the web UI (which only lists
	// and cancels): created_by says so, and person who.
	sp.CreatedBy = schedule.CreatedByAPI
	a, err := h.allow(r)
	if err != nil {
		return err
	}
	sp.Person = a.Person
	sc, err := h.s.Create(r.Context(), sp)
	if err != nil {
		return fromSchedule(err)
	}
	httpjson.Write(w, http.StatusCreated, sc)
	return nil
}

func (h scheduleHandlers) list(w http.ResponseWriter, r *http.Request) error {
	list, err := h.s.List(r.Context())
	if err != nil {
		return fromSchedule(err)
	}
	body := map[string]any{"schedules": list}
	if d := h.s.Damage(); d != nil {
		// Shown by the Scheduled panel: what was left out at start, and
		// where the damaged file was kept.
		body["damaged"] = struct {
			*schedule.Damage
			Message string `json:"message"`
		}{d, d.Message()}
	}
	httpjson.Write(w, http.StatusOK, body)
	return nil
}

func (h scheduleHandlers) cancel(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.allow(r); err != nil {
		return err
	}
	sc, err := h.s.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		return fromSchedule(err)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"cancelled": sc})
	return nil
}

// fromSchedule maps the scheduler's refusals to API errors.
func fromSchedule(err error) error {
	var e *schedule.Error
	if !errors.As(err, &e) {
		return err
	}
	status := http.StatusBadRequest
	switch e.Code {
	case schedule.CodeNotFound:
		status = http.StatusNotFound
	case schedule.CodeTooMany:
		status = http.StatusConflict
	case "storage_full":
		status = http.StatusInsufficientStorage
	case "storage_error", "shutting_down":
		status = http.StatusServiceUnavailable
	}
	return httpjson.Errorf(status, e.Code, e.Message)
}
