package web

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// maxMemoryBody bounds POST and PUT /api/memory: one item's text (at most
// memory.MaxItemChars characters, up to 4 bytes each) in JSON.
const maxMemoryBody = 4*memory.MaxItemChars + 4096

// memoryRoutes mounts /api/memory on api.
func memoryRoutes(api *http.ServeMux, h *apiHandlers) {
	api.Handle("GET /api/memory", apiFunc(h.memoryList))
	api.Handle("POST /api/memory", apiFunc(h.memorySave))
	api.Handle("PUT /api/memory/{id}", apiFunc(h.memoryEdit))
	api.Handle("DELETE /api/memory/{id}", apiFunc(h.memoryForget))
}

// Pages of GET /api/memory: limit items a page (default
// defaultMemoryPage, at most maxMemoryPage), after the item named by
// after (the previous page's next). A store smaller than a page answers
// as before paging (every item, no next), so clients that read only
// "items" keep working until memory outgrows a page.
const (
	defaultMemoryPage = 200
	maxMemoryPage     = 1000
)

func (h *apiHandlers) memoryList(w http.ResponseWriter, r *http.Request) error {
	limit, err := memoryLimit(r.URL.Query().Get("limit"))
	if err != nil {
		return err
	}
	items, err := h.s.MemoryList(r.Context())
	if err != nil {
		return err
	}
	start := 0
	if after := r.URL.Query().Get("after"); after != "" {
		i := slices.IndexFunc(items, func(it memory.Item) bool { return it.ID == after })
		if i < 0 {
			return httpjson.Errorf(http.StatusBadRequest, "bad_after",
				fmt.Sprintf("after=%q names no memory item (forgotten since?): list again from the start, without after", after))
		}
		start = i + 1
	}
	end := min(start+limit, len(items))
	page := items[start:end]
	if page == nil {
		page = []memory.Item{}
	}
	body := map[string]any{"items": page, "total": len(items)}
	if end < len(items) {
		body["next"] = items[end-1].ID
	}
	httpjson.Write(w, http.StatusOK, body)
	return nil
}

// memoryLimit reads GET /api/memory's limit (empty: the default page).
func memoryLimit(s string) (int, error) {
	if s == "" {
		return defaultMemoryPage, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxMemoryPage {
		return 0, httpjson.Errorf(http.StatusBadRequest, "bad_limit",
			fmt.Sprintf("limit=%q: use 1 to %d items a page (default %d)", s, maxMemoryPage, defaultMemoryPage))
	}
	return n, nil
}

// memoryText reads {"text":"…"}: JSON only (a form post from another site
// cannot change memory), no unknown or repeated keys.
func memoryText(w http.ResponseWriter, r *http.Request) (string, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return "", httpjson.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as Content-Type: application/json")
	}
	b, err := httpjson.ReadBody(w, r, maxMemoryBody, "one memory item")
	if err != nil {
		return "", err
	}
	var body struct {
		Text *string `json:"text"`
	}
	if err := strictjson.Unmarshal(b, &body); err != nil {
		return "", httpjson.Errorf(http.StatusBadRequest, "bad_json", `send {"text":"…"}: `+err.Error())
	}
	if body.Text == nil {
		return "", httpjson.Errorf(http.StatusBadRequest, "bad_json", `send {"text":"…"}: text is missing`)
	}
	return *body.Text, nil
}

func (h *apiHandlers) memorySave(w http.ResponseWriter, r *http.Request) error {
	text, err := memoryText(w, r)
	if err != nil {
		return err
	}
	it, err := h.s.MemorySave(r.Context(), text, actor(r, memoryDoor(r)))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, it)
	return nil
}

func (h *apiHandlers) memoryEdit(w http.ResponseWriter, r *http.Request) error {
	text, err := memoryText(w, r)
	if err != nil {
		return err
	}
	it, err := h.s.MemoryEdit(r.Context(), r.PathValue("id"), text, actor(r, memoryDoor(r)))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, it)
	return nil
}

func (h *apiHandlers) memoryForget(w http.ResponseWriter, r *http.Request) error {
	if err := h.s.MemoryForget(r.Context(), r.PathValue("id"), actor(r, memoryDoor(r))); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
