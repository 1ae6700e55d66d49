// Package embed is the client of an OpenAI-compatible /v1/embeddings
// endpoint (OpenAI, Ollama, llama.cpp's server with --embedding, vLLM):
// it turns texts into unit-length vectors for search by meaning.
//
// It is plain net/http and JSON, not the openai-go client the agent uses:
// the endpoint is one POST, and every request here must end within a
// bound the caller sets (a search waits about two seconds, not through
// openai-go's retries with backoff), with an error that says which server
// and what went wrong.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Options configures a Client.
type Options struct {
	// BaseURL is the API root, usually ending in /v1; the client posts to
	// BaseURL + "/embeddings" (a BaseURL that already ends in /embeddings
	// is used as is). Required.
	BaseURL string
	// Model is the embedding model's name. Required.
	Model string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// APIKeyEnv names where APIKey came from, for error messages.
	APIKeyEnv string
	// Batch is the most texts one request carries. Default 64.
	Batch int
	// Timeout bounds one request, from sending to the last byte of the
	// answer. Default 30 s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default a client of its own.
	HTTPClient *http.Client
}

// Client embeds texts. Its methods may be called from any goroutine.
type Client struct {
	opts Options
	url  string
}

// MaxDim is the largest vector dimension accepted. The largest embedding
// models in use answer 4096 (OpenAI's text-embedding-3-large: 3072); a
// vector of 8192 floats is already 32 KiB a document in memory and on
// disk. A server answering more is broken or not an embedding model, and
// it would make every search scan that many floats a document.
const MaxDim = 8192

// Bounds of an answer, read as it arrives (never buffered whole before it
// is checked). A float32 in JSON takes at most 16 bytes
// ("-1.2345678e-38, "), an item's envelope ({"object":"embedding",
// "index":N,"embedding":[…]}) well under 128, the answer's own ("model",
// "usage", …) under 64 KiB: a batch of n texts is at most
// n × (MaxDim × 16 + 128) + 64 KiB — 8.4 MB for the default batch of 64.
const (
	maxFloatBytes   = 16
	maxItemOverhead = 128
	answerSlack     = 64 << 10
)

// maxAnswerBytes is the most bytes the answer for a batch of n texts may
// take.
func maxAnswerBytes(n int) int64 {
	return int64(n)*(MaxDim*maxFloatBytes+maxItemOverhead) + answerSlack
}

// New returns a client for opts.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" || opts.Model == "" {
		return nil, errors.New("embeddings: base_url and model are required")
	}
	if opts.Batch <= 0 {
		opts.Batch = 64
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	u := strings.TrimRight(opts.BaseURL, "/")
	if !strings.HasSuffix(u, "/embeddings") {
		u += "/embeddings"
	}
	return &Client{opts: opts, url: u}, nil
}

// Model returns the model's name.
func (c *Client) Model() string { return c.opts.Model }

// Batch returns the most texts one request carries.
func (c *Client) Batch() int { return c.opts.Batch }

// Embed returns one unit-length vector per text, in order, sending
// Batch texts a request. Every vector has the same dimension; an answer
// that breaks that, or misses a text, is an error. Each request is bounded
// by Options.Timeout and ctx.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += c.opts.Batch {
		vs, err := c.embedBatch(ctx, texts[i:min(i+c.opts.Batch, len(texts))])
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vs[0]) != len(out[0]) {
			return nil, fmt.Errorf("embeddings from %s: the dimension changed from %d to %d within one call", c.url, len(out[0]), len(vs[0]))
		}
		out = append(out, vs...)
	}
	return out, nil
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type answer struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// embedBatch makes one request.
func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	body, _ := json.Marshal(request{Model: c.opts.Model, Input: texts, EncodingFormat: "float"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("embeddings from %s: no answer within %s", c.url, c.opts.Timeout)
		}
		return nil, fmt.Errorf("embeddings from %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	b, err := c.readAnswer(ctx, resp, maxAnswerBytes(len(texts)))
	if err != nil {
		return nil, err
	}
	if looksHTML(resp.Header.Get("Content-Type"), b) {
		return nil, c.htmlError(resp.StatusCode)
	}
	var a answer
	jerr := json.Unmarshal(b, &a)
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(resp.StatusCode, a, jerr, b)
	}
	if jerr != nil {
		return nil, fmt.Errorf("embeddings from %s: the answer is not OpenAI embeddings JSON: %v", c.url, jerr)
	}
	return c.vectors(a, len(texts))
}

// readAnswer reads the answer's body, at most limit bytes: an answer
// that says or turns out to be longer is refused as soon as it passes the
// bound, and what was read of it dropped.
func (c *Client) readAnswer(ctx context.Context, resp *http.Response, limit int64) ([]byte, error) {
	over := func() error {
		return fmt.Errorf("embeddings from %s: the answer is over %d bytes (the most a batch's vectors of up to %d dimensions take): refused", c.url, limit, MaxDim)
	}
	if resp.ContentLength > limit {
		return nil, over()
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("embeddings from %s: the answer did not finish within %s", c.url, c.opts.Timeout)
		}
		return nil, fmt.Errorf("embeddings from %s: read answer: %w", c.url, err)
	}
	if int64(len(b)) > limit {
		return nil, over()
	}
	return b, nil
}

// looksHTML reports whether an answer is a web page rather than JSON: a
// base_url that names the server's root, not its API, gets its home or
// error page.
func looksHTML(contentType string, body []byte) bool {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/html" {
		return true
	}
	b := bytes.TrimSpace(body)
	return len(b) > 0 && b[0] == '<'
}

// htmlError is the one sentence for an HTML answer, suggesting the path
// the API usually lives under.
func (c *Client) htmlError(code int) error {
	base := strings.TrimRight(c.opts.BaseURL, "/")
	hint := "is search.embeddings.base_url the API root (the URL that ends in /v1)?"
	if !strings.HasSuffix(base, "/v1") && !strings.HasSuffix(base, "/embeddings") {
		hint = "is search.embeddings.base_url missing /v1 (try " + base + "/v1)?"
	}
	return fmt.Errorf("embeddings from %s: %d %s: the server answered HTML, not JSON: %s", c.url, code, http.StatusText(code), hint)
}

// statusError explains an answer that is not 200.
func (c *Client) statusError(code int, a answer, jerr error, body []byte) error {
	msg := strings.TrimSpace(string(body))
	if jerr == nil && a.Error != nil && a.Error.Message != "" {
		msg = a.Error.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	hint := ""
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = "; check the API key"
		if c.opts.APIKeyEnv != "" {
			hint += " in " + c.opts.APIKeyEnv
		}
	case http.StatusNotFound:
		hint = "; check search.embeddings.base_url (the API root, e.g. http://127.0.0.1:11434/v1) and model"
	}
	return fmt.Errorf("embeddings from %s: %d %s: %s%s", c.url, code, http.StatusText(code), msg, hint)
}

// vectors checks an answer and normalises its vectors to unit length.
func (c *Client) vectors(a answer, n int) ([][]float32, error) {
	if len(a.Data) != n {
		return nil, fmt.Errorf("embeddings from %s: %d vectors for %d texts", c.url, len(a.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range a.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings from %s: bad or repeated index %d", c.url, d.Index)
		}
		if len(d.Embedding) > MaxDim {
			return nil, fmt.Errorf("embeddings from %s: a vector of %d dimensions; at most %d are taken (no embedding model answers more): is search.embeddings.model an embedding model?", c.url, len(d.Embedding), MaxDim)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) != len(a.Data[0].Embedding) {
			return nil, fmt.Errorf("embeddings from %s: vectors of different dimensions (%d and %d)", c.url, len(a.Data[0].Embedding), len(d.Embedding))
		}
		out[d.Index] = Normalize(d.Embedding)
	}
	return out, nil
}

// Normalize scales v to unit length in place (a zero vector stays zero)
// and returns it: the dot product of two is then their cosine.
func Normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	k := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= k
	}
	return v
}
