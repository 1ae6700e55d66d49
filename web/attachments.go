package web

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
)

// AttachmentStore is the attachment store as the API uses it.
// *attachments.Store implements it (main wires it in). Put stores a file
// (name is sanitised, the type sniffed; a read error of r comes back
// wrapped); Open's errors wrap fs.ErrInvalid for a malformed id and
// fs.ErrNotExist for an unknown one.
type AttachmentStore interface {
	Put(r io.Reader, name string) (event.Attachment, error)
	Open(sha256 string) (*os.File, event.Attachment, error)
}

// DefaultAttachmentMaxBytes is Options.AttachmentMaxBytes' default.
const DefaultAttachmentMaxBytes = 20 << 20

// Upload limits besides the file's own.
const (
	// multipartSlack is what a multipart body may hold besides the file:
	// boundaries, part headers, other (ignored) fields.
	multipartSlack = 1 << 20
	// uploadTimeout replaces the server's body deadline for an upload
	// that passed the token check: 20 MiB take minutes on a slow uplink.
	uploadTimeout = 10 * time.Minute
)

// attachmentCSP stops whatever a served file is from running anything: no
// script, no plugin, no form, no frame, sandboxed. An image still shows.
const attachmentCSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

// errTooLarge is what capReader returns past its limit.
var errTooLarge = errors.New("the file is larger than attachments.max_bytes")

// capReader yields at most n bytes of r and fails with errTooLarge when r
// holds more; the store then removes what it had written.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var one [1]byte
		if m, err := c.r.Read(one[:]); m > 0 {
			return 0, errTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	m, err := c.r.Read(p)
	c.n -= int64(m)
	return m, err
}

// attachmentRoutes mounts POST /api/attachments and GET /api/attachments/{sha256}.
func attachmentRoutes(api *http.ServeMux, o Options) {
	limit := o.AttachmentMaxBytes
	if limit <= 0 {
		limit = DefaultAttachmentMaxBytes
	}
	api.Handle("POST /api/attachments", apiFunc(func(w http.ResponseWriter, r *http.Request) error {
		a, err := upload(w, r, o.Attachments, limit)
		if err != nil {
			return err
		}
		httpjson.Write(w, http.StatusCreated, a)
		return nil
	}))
	api.HandleFunc("GET /api/attachments/{sha256}", func(w http.ResponseWriter, r *http.Request) {
		serveAttachment(w, r, o.Attachments)
	})
}

// upload stores the file of an upload request: the raw body (named by
// ?name=), or the part named "file" of a multipart/form-data body.
func upload(w http.ResponseWriter, r *http.Request, store AttachmentStore, limit int64) (event.Attachment, error) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(uploadTimeout))
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return event.Attachment{}, httpjson.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"send the file as the body with any Content-Type (the type is sniffed from the bytes) and ?name=, or as multipart/form-data field \"file\"")
	}
	mt, _, _ := mime.ParseMediaType(ct)
	if r.ContentLength > limit+multipartSlack {
		refuse(w) // the rest of the body is never read
		return event.Attachment{}, tooLarge(limit)
	}
	var (
		a   event.Attachment
		err error
	)
	if mt == "multipart/form-data" {
		a, err = uploadMultipart(w, r, store, limit)
	} else {
		a, err = store.Put(&capReader{r: r.Body, n: limit}, r.URL.Query().Get("name"))
	}
	if err != nil {
		return a, uploadError(w, err, limit)
	}
	return a, nil
}

func uploadMultipart(w http.ResponseWriter, r *http.Request, store AttachmentStore, limit int64) (event.Attachment, error) {
	r.Body = http.MaxBytesReader(w, r.Body, limit+multipartSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return event.Attachment{}, httpjson.Errorf(http.StatusBadRequest, "bad_body", "the multipart body is malformed: "+err.Error())
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return event.Attachment{}, httpjson.Errorf(http.StatusBadRequest, "no_file", `the multipart body has no field "file"`)
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
				return event.Attachment{}, err
			}
			return event.Attachment{}, httpjson.Errorf(http.StatusBadRequest, "bad_body", "the multipart body ended early or is malformed; nothing was stored")
		}
		if p.FormName() != "file" {
			p.Close()
			continue
		}
		return store.Put(&capReader{r: p, n: limit}, p.FileName())
	}
}

func tooLarge(limit int64) error {
	return httpjson.Errorf(http.StatusRequestEntityTooLarge, "too_large",
		fmt.Sprintf("the file is larger than %s (attachments.max_bytes)", event.FormatSize(limit)))
}

// uploadError maps a failed upload to an API error.
func uploadError(w http.ResponseWriter, err error, limit int64) error {
	var (
		mbe *http.MaxBytesError
		he  *httpjson.Error
	)
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, errTooLarge), errors.As(err, &mbe):
		refuse(w)
		return tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return httpjson.Errorf(http.StatusRequestTimeout, "body_timeout", "the body did not arrive in time")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return httpjson.Errorf(http.StatusBadRequest, "bad_body", "the body ended early or is malformed; nothing was stored")
	}
	return err
}

// serveAttachment answers GET /api/attachments/{sha256}. Only the image
// types models and browsers share (event.Attachment.Image) are shown
// inline; everything else is a download, and markup is served as plain
// text besides, so an uploaded HTML or SVG page never runs in our origin.
func serveAttachment(w http.ResponseWriter, r *http.Request, store AttachmentStore) {
	f, a, err := store.Open(r.PathValue("sha256"))
	switch {
	case errors.Is(err, fs.ErrInvalid):
		httpjson.WriteError(w, httpjson.Errorf(http.StatusBadRequest, "bad_attachment", err.Error()))
		return
	case errors.Is(err, fs.ErrNotExist):
		httpjson.WriteError(w, httpjson.Errorf(http.StatusNotFound, "not_found", "no attachment "+r.PathValue("sha256")+" is stored"))
		return
	case err != nil:
		httpjson.WriteError(w, err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", attachmentCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("ETag", `"`+a.SHA256+`"`)
	disposition, typ := "attachment", a.Type
	if a.Image() {
		disposition = "inline"
	} else if strings.Contains(typ, "html") || strings.Contains(typ, "xml") || strings.Contains(typ, "javascript") {
		typ = "text/plain; charset=utf-8"
	}
	h.Set("Content-Type", typ)
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": a.Name}))
	http.ServeContent(w, r, "", time.Time{}, f)
}
