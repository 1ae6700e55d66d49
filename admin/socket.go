package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
)

// SocketName is the admin socket under data_dir.
const SocketName = "admin.sock"

// request is what the commands send.
type request struct {
	Person  string `json:"person"`
	Label   string `json:"label,omitempty"`
	Expires string `json:"expires,omitempty"`
}

type errorBody struct {
	Error string `json:"error"`
	Usage bool   `json:"usage,omitempty"`
}

// Handler serves s over HTTP: POST /token/add, GET /token/list,
// POST /token/revoke, POST /login-link.
func Handler(s *Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token/add", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, func(q request) (any, error) {
			a, err := s.AddToken(q.Person, q.Label, q.Expires)
			a.Credential.Hash = ""
			return a, err
		})
	})
	mux.HandleFunc("POST /token/revoke", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, func(q request) (any, error) { c, err := s.Revoke(q.Person, q.Label); c.Hash = ""; return c, err })
	})
	mux.HandleFunc("POST /login-link", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, func(q request) (any, error) { a, err := s.LoginLink(q.Person); a.Credential.Hash = ""; return a, err })
	})
	mux.HandleFunc("GET /token/list", func(w http.ResponseWriter, r *http.Request) {
		list := s.List()
		for i := range list {
			list[i].Hash = "" // not needed to list or revoke
		}
		writeJSON(w, http.StatusOK, list)
	})
	return mux
}

func serve(w http.ResponseWriter, r *http.Request, fn func(request) (any, error)) {
	var q request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&q); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "bad request: " + err.Error(), Usage: true})
		return
	}
	out, err := fn(q)
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: ue.Msg, Usage: true})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Listen serves s on the unix socket path (0600; a stale socket left by
// a crash is replaced) until the returned stop is called.
func Listen(path string, s *Service) (stop func(), err error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("admin socket %s: another frontdesk answers on it", path)
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	srv := &http.Server{Handler: Handler(s), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(path)
	}, nil
}

// Client talks to a running server's admin socket.
type Client struct{ hc *http.Client }

// Dial returns a client of the server answering on the socket path, or
// an error when none answers (the server is stopped).
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, err
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 15 * time.Second}}, nil
}

func (c *Client) do(method, path string, q *request, out any) error {
	var body io.Reader
	if q != nil {
		b, _ := json.Marshal(q)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://admin"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		_ = json.NewDecoder(resp.Body).Decode(&e)
		if e.Usage {
			return &UsageError{Msg: e.Error}
		}
		return fmt.Errorf("the server: %s", e.Error)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// AddToken is Service.AddToken on the server.
func (c *Client) AddToken(person, label, expires string) (a Added, err error) {
	return a, c.do("POST", "/token/add", &request{Person: person, Label: label, Expires: expires}, &a)
}

// LoginLink is Service.LoginLink on the server.
func (c *Client) LoginLink(person string) (a Added, err error) {
	return a, c.do("POST", "/login-link", &request{Person: person}, &a)
}

// Revoke is Service.Revoke on the server.
func (c *Client) Revoke(person, label string) (cr auth.Credential, err error) {
	return cr, c.do("POST", "/token/revoke", &request{Person: person, Label: label}, &cr)
}

// List is Service.List on the server.
func (c *Client) List() (list []auth.Credential, err error) {
	return list, c.do("GET", "/token/list", nil, &list)
}

// Admin is what the commands need: a Client, or a Local service.
type Admin interface {
	AddToken(person, label, expires string) (Added, error)
	LoginLink(person string) (Added, error)
	Revoke(person, label string) (auth.Credential, error)
	List() ([]auth.Credential, error)
}

// Local adapts a Service to Admin.
type Local struct{ *Service }

// List implements Admin.
func (l Local) List() ([]auth.Credential, error) { return l.Service.List(), nil }

var (
	_ Admin = (*Client)(nil)
	_ Admin = Local{}
)
