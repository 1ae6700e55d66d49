package embed_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
)

func newClient(t *testing.T, base string, batch int, timeout time.Duration) *embed.Client {
	t.Helper()
	c, err := embed.New(embed.Options{BaseURL: base, Model: "fake", Batch: batch, Timeout: timeout, APIKeyEnv: "EMBED_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmbedBatches(t *testing.T) {
	srv := embedtest.NewServer()
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), 4, time.Second)
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = fmt.Sprintf("text number %d", i)
	}
	vs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 10 {
		t.Fatalf("got %d vectors, want 10", len(vs))
	}
	for i, v := range vs {
		want := embedtest.Concepts(texts[i], embedtest.DefaultDim)
		var dot, norm float64
		for j := range v {
			dot += float64(v[j]) * float64(want[j])
			norm += float64(v[j]) * float64(v[j])
		}
		if math.Abs(dot-1) > 1e-5 || math.Abs(norm-1) > 1e-5 {
			t.Errorf("vector %d: cosine with its text's %.4f, norm² %.4f; want both 1", i, dot, norm)
		}
	}
	if req, n, most := srv.Stats(); req != 3 || n != 10 || most != 4 {
		t.Errorf("server saw %d requests, %d texts, largest batch %d; want 3, 10, 4", req, n, most)
	}
}

func TestEmbedErrors(t *testing.T) {
	srv := embedtest.NewServer()
	defer srv.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // a port nobody listens on
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func()
		base  string
		want  string
	}{
		{"server error", func() { srv.SetFail(500) }, srv.BaseURL(), "500 Internal Server Error: the fake server was told to fail"},
		{"key rejected", func() { srv.SetFail(401) }, srv.BaseURL(), "check the API key in EMBED_KEY"},
		{"wrong path", func() { srv.SetFail(0) }, srv.URL + "/nope", "check search.embeddings.base_url"},
		{"slow", func() { srv.SetDelay(2 * time.Second) }, srv.BaseURL(), "no answer within 200ms"},
		{"down", func() {}, down.URL + "/v1", "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			c := newClient(t, tc.base, 8, 200*time.Millisecond)
			start := time.Now()
			_, err := c.Embed(ctx, []string{"hello"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one saying %q", err, tc.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %s; the bound is 200ms", d)
			}
		})
	}
}

func TestEmbedBadAnswers(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not json", `hello`, "not OpenAI embeddings JSON"},
		{"too few", `{"data":[]}`, "0 vectors for 2 texts"},
		{"mixed dims", `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[1]}]}`, "different dimensions"},
		{"repeated index", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, "repeated index 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
			defer srv.Close()
			_, err := newClient(t, srv.URL, 8, time.Second).Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one saying %q", err, tc.want)
			}
		})
	}
}

// TestConceptsParaphrase: the stand-in makes a paraphrase closer than an
// unrelated text.
func TestConceptsParaphrase(t *testing.T) {
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	q := embedtest.Concepts("which car did I purchase", 256)
	near := dot(q, embedtest.Concepts("I bought a new automobile last weekend", 256))
	far := dot(q, embedtest.Concepts("the dentist moved my appointment", 256))
	if near < 0.5 || far > 0.2 {
		t.Errorf("cosine with the paraphrase %.2f (want ≥ 0.5), with an unrelated text %.2f (want ≤ 0.2)", near, far)
	}
}

// BenchmarkEmbedThroughput embeds 10,000 texts through the client and the
// fake server (batches of 64): texts per second of the client's and the
// fake's own work (JSON both ways, HTTP on loopback), an upper bound of
// what the index's embedding loop can take from a real server, whose
// model is then what limits.
func BenchmarkEmbedThroughput(b *testing.B) {
	srv := embedtest.NewServer()
	defer srv.Close()
	c, err := embed.New(embed.Options{BaseURL: srv.BaseURL(), Model: "fake", Batch: 64})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 10_000)
	for i := range texts {
		texts[i] = fmt.Sprintf("message %d: the plumber is coming on Tuesday to mend the boiler in the flat", i)
	}
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := c.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
		n += len(texts)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "texts/s")
}

// TestEmbedAnswerBoundedWhileRead: a server that answers without end is
// refused once the answer passes the most a batch's vectors can take; the
// client stops reading there (the server could write little more than
// the bound and the socket buffers), it does not buffer the answer first.
func TestEmbedAnswerBoundedWhileRead(t *testing.T) {
	const giveUp = 1 << 30 // the server stops here if the client never does
	written := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n, _ := w.Write([]byte(`{"data":[{"index":0,"embedding":[`))
		total := int64(n)
		chunk := []byte(strings.Repeat("0.125,", 10922)) // 64 KiB
		for total < giveUp {
			n, err := w.Write(chunk)
			total += int64(n)
			if err != nil {
				break
			}
		}
		written <- total
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL+"/v1", 8, time.Minute).Embed(context.Background(), []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v; want the answer refused as too long", err)
	}
	got := <-written
	t.Logf("the server wrote %d KB before the client stopped reading (bound %d KB)", got>>10, (embed.MaxDim*16+128+64<<10)>>10)
	// One text's bound is about 200 KB; loopback socket buffers hold a few MB.
	if got > 32<<20 {
		t.Errorf("the server wrote %d MB before the client stopped reading; want it stopped near the bound (a few MB at most)", got>>20)
	}
}

// TestEmbedDimensionCapped: a vector of more than 8192
// dimensions is refused with a sentence saying why.
func TestEmbedDimensionCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"index":0,"embedding":[` + strings.TrimSuffix(strings.Repeat("1,", 200_000), ",") + `]}`))
		for i := 1; i < 64; i++ {
			fmt.Fprintf(w, `,{"index":%d,"embedding":[1]}`, i)
		}
		w.Write([]byte(`]}`))
	}))
	defer srv.Close()
	// 64 texts: the answer (400 KB) is within the batch's bound, the
	// vector is not.
	vs, err := newClient(t, srv.URL+"/v1", 64, 10*time.Second).Embed(context.Background(), make([]string, 64))
	if err == nil || !strings.Contains(err.Error(), "200000 dimensions") || !strings.Contains(err.Error(), fmt.Sprint(embed.MaxDim)) {
		t.Fatalf("got %d vectors, err = %v; want the 200,000-dimension vector refused naming the cap %d", len(vs), err, embed.MaxDim)
	}
}

// TestEmbedHTMLAnswer: a base_url without /v1 that reaches a web page
// gets one sentence suggesting the path, not the page.
func TestEmbedHTMLAnswer(t *testing.T) {
	page := "<!DOCTYPE html><html><head><title>Welcome</title></head><body>" + strings.Repeat("<p>This is the web interface.</p>", 20) + "</body></html>"
	for _, tc := range []struct {
		name   string
		status int
		ctype  string
	}{
		{"ok page", 200, "text/html; charset=utf-8"},
		{"not found page", 404, "text/html"},
		{"page without a type", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				} else {
					w.Header()["Content-Type"] = nil
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(page))
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, 8, 5*time.Second).Embed(context.Background(), []string{"hello"})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "answered HTML, not JSON") || !strings.Contains(msg, "missing /v1 (try "+srv.URL+"/v1)") {
				t.Errorf("err = %q; want it to say the answer is HTML and suggest %s/v1", msg, srv.URL)
			}
			if strings.Contains(msg, "<") || len(msg) > 300 {
				t.Errorf("err = %q (%d bytes); want one sentence without the page", msg, len(msg))
			}
		})
	}
}
