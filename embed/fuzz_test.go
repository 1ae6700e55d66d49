package embed_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed"
)

// FuzzEmbedAnswer: whatever an embeddings server answers, the client
// never panics, and what it accepts is one vector a text, all of one
// dimension, at most embed.MaxDim.
func FuzzEmbedAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}]}`,
		`{"data":[{"index":1,"embedding":[1]},{"index":0,"embedding":[2]}]}`,
		`{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[1]}]}`,
		`<html><body>nope</body></html>`,
		`{"error":{"message":"model not found"}}`,
		`{"data":null}`, ``, `[`,
	} {
		f.Add(seed, 200)
	}
	f.Fuzz(func(t *testing.T, body string, status int) {
		if status < 200 || status > 599 {
			status = 200
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		defer srv.Close()
		c, err := embed.New(embed.Options{BaseURL: srv.URL + "/v1", Model: "fuzz", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := c.Embed(context.Background(), []string{"a", "b"})
		if err != nil {
			return
		}
		if len(vs) != 2 || len(vs[0]) == 0 || len(vs[0]) != len(vs[1]) || len(vs[0]) > embed.MaxDim {
			t.Fatalf("accepted %d vectors of dimensions %v", len(vs), dims(vs))
		}
	})
}

func dims(vs [][]float32) []int {
	var d []int
	for _, v := range vs {
		d = append(d, len(v))
	}
	return d
}
