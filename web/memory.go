package web

import (
	"mime"
	"net/http"

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

func (h *apiHandlers) memoryList(w http.ResponseWriter, r *http.Request) error {
	items, err := h.s.MemoryList(r.Context())
	if err != nil {
		return err
	}
	if items == nil {
		items = []memory.Item{}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"items": items})
	return nil
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
	it, err := h.s.MemorySave(r.Context(), text, memoryDoor(r))
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
	it, err := h.s.MemoryEdit(r.Context(), r.PathValue("id"), text, memoryDoor(r))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, it)
	return nil
}

func (h *apiHandlers) memoryForget(w http.ResponseWriter, r *http.Request) error {
	if err := h.s.MemoryForget(r.Context(), r.PathValue("id"), memoryDoor(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
