package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/web"
)

// GET /api/memory pages: limit items after the item named by after, with
// next while there are more and total; without parameters a store smaller
// than a page answers every item as before. Bad parameters are a clear 400.
func TestMemoryAPIPages(t *testing.T) {
	e := startMemory(t, web.Options{})
	js := []string{"Content-Type", "application/json"}
	var want []string
	for i := range 5 {
		r := do(t, request(t, "POST", e.srv.URL+"/api/memory", fmt.Sprintf(`{"text":"fact %d"}`, i), js...))
		if r.status != 201 {
			t.Fatalf("POST = %d %s", r.status, r.raw)
		}
		want = append(want, r.body["id"].(string))
	}
	type page struct {
		Items []memory.Item
		Total int
		Next  string
	}
	get := func(query string) page {
		t.Helper()
		r := do(t, request(t, "GET", e.srv.URL+"/api/memory"+query, ""))
		if r.status != 200 {
			t.Fatalf("GET /api/memory%s = %d %s", query, r.status, r.raw)
		}
		var p page
		if err := json.Unmarshal([]byte(r.raw), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := get(""); len(p.Items) != 5 || p.Total != 5 || p.Next != "" {
		t.Fatalf("unpaged: %d items, total %d, next %q; want all 5, no next", len(p.Items), p.Total, p.Next)
	}
	var got []string
	pages, q := 0, "?limit=2"
	for {
		p := get(q)
		pages++
		if p.Total != 5 || len(p.Items) > 2 {
			t.Fatalf("page %d: %d items, total %d", pages, len(p.Items), p.Total)
		}
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
		if p.Next == "" {
			break
		}
		q = "?limit=2&after=" + p.Next
	}
	if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages %d holding %v, want 3 holding %v", pages, got, want)
	}
	for _, tc := range []struct{ query, code string }{
		{"?limit=0", "bad_limit"}, {"?limit=abc", "bad_limit"}, {"?limit=100000", "bad_limit"},
		{"?after=m999999", "bad_after"},
	} {
		r := do(t, request(t, "GET", e.srv.URL+"/api/memory"+tc.query, ""))
		if r.status != 400 || r.body["code"] != tc.code || r.body["message"] == "" {
			t.Errorf("GET /api/memory%s = %d %s, want 400 %s", tc.query, r.status, r.raw, tc.code)
		}
	}
}

// At memory.max_items a POST is 409 memory_full naming the key; nothing
// is saved; after a DELETE there is room again.
func TestMemoryAPIFull(t *testing.T) {
	e := startMemoryCfg(t, web.Options{}, &agent.Demo{}, hub.Config{MaxMemoryItems: 2})
	js := []string{"Content-Type", "application/json"}
	var first string
	for i := range 2 {
		r := do(t, request(t, "POST", e.srv.URL+"/api/memory", fmt.Sprintf(`{"text":"fact %d"}`, i), js...))
		if r.status != 201 {
			t.Fatalf("POST = %d %s", r.status, r.raw)
		}
		if i == 0 {
			first = r.body["id"].(string)
		}
	}
	r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"one too many"}`, js...))
	if r.status != 409 || r.body["code"] != "memory_full" || !strings.Contains(r.raw, "memory.max_items") {
		t.Fatalf("POST at the cap = %d %s, want 409 memory_full naming memory.max_items", r.status, r.raw)
	}
	if got := memoryItems(t, e); len(got) != 2 {
		t.Fatalf("items after the refused POST: %d, want 2", len(got))
	}
	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/memory/"+first, "")); r.status != 204 {
		t.Fatalf("DELETE = %d", r.status)
	}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"one too many"}`, js...)); r.status != 201 {
		t.Fatalf("POST after a forget = %d %s", r.status, r.raw)
	}
}
