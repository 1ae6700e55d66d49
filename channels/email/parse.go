package email

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode legacy charsets (ISO-8859-*, Windows-125x, Shift_JIS, …)
	"github.com/emersion/go-message/mail"
)

// Limits on a mail's structure. go-message has none of its own, so they are
// checked while walking the MIME tree, before each part is read. The total
// size is capped earlier, while fetching (Options.MaxBytes).
const (
	// maxDepth is the deepest multipart nesting looked into; deeper parts
	// are ignored.
	maxDepth = 10
	// maxParts is the number of MIME parts looked at; the rest is ignored.
	maxParts = 100
)

// mailMsg is what the channel needs from one mail.
type mailMsg struct {
	Header mail.Header
	// From is the single From address, lowercased; "" if the header is
	// missing, unparsable or names more than one address.
	From string
	// ReturnPath is the envelope sender from the topmost Return-Path
	// header, lowercased; "" for the null sender <>.
	ReturnPath    string
	HasReturnPath bool
	Subject       string
	MessageID     string   // without <>; "" if missing
	References    []string // References, else In-Reply-To; without <>
	// Text is the body as plain text (HTML converted), quoted history
	// trimmed. It may be empty.
	Text string
	// Capped is set when parts were ignored for the depth or part limits.
	Capped bool
	Parts  int
	// Files are the attachments and inline parts (images of an HTML
	// mail, say) within the depth and part limits, decoded, in order.
	Files []mailFile
}

// mailFile is one file of a mail. Its bytes are decoded (base64,
// quoted-printable), so they are no larger than the raw mail, which is
// capped at Options.MaxBytes.
type mailFile struct {
	Name string
	Data []byte
}

var errTooManyParts = errors.New("too many MIME parts")

// parseMail reads a raw RFC 5322 message. It fails only when not even the
// header can be read; a broken body yields an empty Text.
func parseMail(raw []byte) (*mailMsg, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return nil, err
	}
	// An unknown charset or transfer encoding still yields a readable entity.
	h := mail.Header{Header: e.Header}
	m := &mailMsg{Header: h}
	if from, err := h.AddressList("From"); err == nil && len(from) == 1 {
		m.From = strings.ToLower(from[0].Address)
	}
	if rp := e.Header.Values("Return-Path"); len(rp) > 0 {
		m.HasReturnPath = true
		m.ReturnPath = parseReturnPath(rp[0])
	}
	if s, err := h.Subject(); err == nil {
		m.Subject = cleanLine(s)
	} else {
		m.Subject = cleanLine(h.Get("Subject"))
	}
	if id, err := h.MessageID(); err == nil {
		m.MessageID = id
	}
	if refs, err := h.MsgIDList("References"); err == nil && len(refs) > 0 {
		m.References = refs
	} else if irt, err := h.MsgIDList("In-Reply-To"); err == nil {
		m.References = irt
	}

	w := walker{}
	_ = w.walk(e, 0) // a broken structure keeps what was read before it
	m.Capped, m.Parts, m.Files = w.capped, w.parts, w.files
	text := w.plain
	if strings.TrimSpace(text) == "" && w.html != "" {
		text = htmlToText(w.html)
	}
	m.Text = trimQuoted(normalizeText(text))
	return m, nil
}

// parseReturnPath turns "<ana@example.com>" into "ana@example.com" and
// "<>" into "".
func parseReturnPath(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		v = v[i+1:]
		if j := strings.IndexByte(v, '>'); j >= 0 {
			v = v[:j]
		}
	}
	return strings.ToLower(strings.TrimSpace(v))
}

// walker finds the first text/plain and the first text/html part, and
// every file part, within the depth and part limits.
type walker struct {
	parts       int
	capped      bool
	plain, html string
	files       []mailFile
}

func (w *walker) walk(e *message.Entity, depth int) error {
	w.parts++
	if w.parts > maxParts {
		w.capped = true
		return errTooManyParts
	}
	if mr := e.MultipartReader(); mr != nil {
		if depth >= maxDepth {
			w.capped = true
			return nil
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return nil
			}
			if p == nil {
				return err
			}
			if err := w.walk(p, depth+1); err != nil {
				return err
			}
		}
	}
	mt, ctParams, err := e.Header.ContentType()
	if err != nil || mt == "" {
		mt = "text/plain" // RFC 2045 default
	}
	disp, dispParams, _ := e.Header.ContentDisposition()
	name := dispParams["filename"]
	if name == "" {
		name = ctParams["name"]
	}
	// A part is a file when it says so, has a name, or is not text: an
	// image inline in an HTML mail is as much the sender's as an attachment.
	if disp == "attachment" || name != "" || (mt != "text/plain" && mt != "text/html") {
		b, err := io.ReadAll(e.Body)
		if err != nil {
			return nil // undecodable: nothing to keep
		}
		if name == "" {
			name = fmt.Sprintf("part-%d", w.parts)
		}
		w.files = append(w.files, mailFile{Name: name, Data: b})
		return nil
	}
	switch mt {
	case "text/plain":
		if w.plain == "" {
			w.plain = readText(e.Body)
		}
	case "text/html":
		if w.html == "" {
			w.html = readText(e.Body)
		}
	}
	return nil
}

// readText reads a decoded body; a decoding error keeps what was read.
// The mail as a whole is already capped at max_bytes, and no transfer or
// charset decoding more than triples it.
func readText(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

// invisible are characters that render as nothing; they hide text from a
// human reader (and pad prompt injections), so they are removed.
var invisible = strings.NewReplacer(
	"\u200b", "", "\u200c", "", "\u200d", "", "\u2060", "", "\ufeff", "", "\u00ad", "",
	"\u202a", "", "\u202b", "", "\u202c", "", "\u202d", "", "\u202e", "",
	"\u2066", "", "\u2067", "", "\u2068", "", "\u2069", "",
)

// normalizeText makes text valid UTF-8 with \n line ends, without control
// characters, trailing spaces or runs of blank lines.
func normalizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = invisible.Replace(s)
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// cleanLine makes a header value one clean line.
func cleanLine(s string) string {
	s = normalizeText(s)
	return strings.Join(strings.Fields(s), " ")
}

// Lines that start the quoted history of a reply.
var (
	attribution = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^on\b.{0,300}\bwrote:$`),                    // Gmail, Apple Mail, Thunderbird
		regexp.MustCompile(`(?i)^le\b.{0,300}\ba écrit ?:$`),                // French
		regexp.MustCompile(`(?i)^am\b.{0,300}\bschrieb\b.{0,300}:$`),        // German
		regexp.MustCompile(`(?i)^el\b.{0,300}\bescribió:$`),                 // Spanish
		regexp.MustCompile(`(?i)^il\b.{0,300}\bha scritto:$`),               // Italian
		regexp.MustCompile(`(?i)^op\b.{0,300}\bschreef\b.{0,300}:$`),        // Dutch
		regexp.MustCompile(`(?i)^em\b.{0,300}\bescreveu:$`),                 // Portuguese
		regexp.MustCompile(`(?i)^-{2,}\s*original message\s*-{2,}$`),        // Outlook
		regexp.MustCompile(`(?i)^-{2,}\s*ursprüngliche nachricht\s*-{2,}$`), // Outlook, German
	}
	wrappedOn  = regexp.MustCompile(`(?i)^on\b.{0,300}$`)
	wroteEnd   = regexp.MustCompile(`(?i)\bwrote:$`)
	underscore = regexp.MustCompile(`^_{20,}$`)
	outlookHdr = regexp.MustCompile(`(?i)^(from|von|de):\s`)
)

// trimQuoted drops the quoted history of a reply: everything from the
// attribution line ("On … wrote:", "-----Original Message-----", Outlook's
// rule followed by From:), every line quoted with ">", and the signature
// after "-- ". Forwarded messages are kept: they are the content. If
// nothing would be left, the text is returned as it was.
func trimQuoted(s string) string {
	lines := strings.Split(s, "\n")
	cut := len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		next := ""
		if i+1 < len(lines) {
			next = strings.TrimSpace(lines[i+1])
		}
		if matchAny(attribution, t) ||
			(wrappedOn.MatchString(t) && !wroteEnd.MatchString(t) && wroteEnd.MatchString(next) && len(next) < 200) ||
			(underscore.MatchString(t) && outlookHdr.MatchString(next)) {
			cut = i
			break
		}
	}
	var kept []string
	for _, l := range lines[:cut] {
		if l == "-- " || l == "--" {
			break
		}
		if strings.HasPrefix(strings.TrimLeft(l, " "), ">") {
			continue
		}
		kept = append(kept, l)
	}
	out := normalizeText(strings.Join(kept, "\n"))
	if out == "" {
		return s
	}
	return out
}

func matchAny(res []*regexp.Regexp, s string) bool {
	if len(s) > 1000 || !utf8.ValidString(s) {
		return false
	}
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
