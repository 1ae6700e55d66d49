package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/web"
)

// TestMemoryDoorLabel: a change the page makes (its fetches carry
// Sec-Fetch-Site: same-origin) is by "web" — the item's source and the
// memory_changed event's by — and one from curl or a script is by "api".
func TestMemoryDoorLabel(t *testing.T) {
	e := startMemory(t, web.Options{})
	page := []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"}
	r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"from the page"}`, page...))
	if r.status != http.StatusCreated || r.body["source"] != "web" {
		t.Fatalf("the page's save: %d %s, want 201 and source web", r.status, r.raw)
	}
	id := r.body["id"].(string)
	r = do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"from curl"}`, "Content-Type", "application/json"))
	if r.status != http.StatusCreated || r.body["source"] != "api" {
		t.Fatalf("curl's save: %d %s, want 201 and source api", r.status, r.raw)
	}
	if r := do(t, request(t, "PUT", e.srv.URL+"/api/memory/"+id, `{"text":"edited on the page"}`, page...)); r.status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/memory/"+id, "", "Sec-Fetch-Site", "same-origin")); r.status != http.StatusNoContent {
		t.Fatalf("forget: %d %s", r.status, r.raw)
	}
	evs, err := e.hub.Recent(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Type != event.MemoryChanged {
			continue
		}
		var d event.MemoryChangedData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Action+" by "+d.By)
	}
	want := []string{"saved by web", "saved by api", "edited by web", "deleted by web"}
	if len(got) != len(want) {
		t.Fatalf("memory_changed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("memory_changed %v, want %v", got, want)
		}
	}
}
