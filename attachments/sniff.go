package attachments

import (
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// sniffLen is how much of a file the type is sniffed from (what
// http.DetectContentType looks at).
const sniffLen = 512

// textTypes name text kinds by extension. They are used only for bytes
// that already sniffed as UTF-8 text: an extension never turns binary
// into text, nor text into an image.
var textTypes = map[string]string{
	".md":       "text/markdown; charset=utf-8",
	".markdown": "text/markdown; charset=utf-8",
	".csv":      "text/csv; charset=utf-8",
	".tsv":      "text/tab-separated-values; charset=utf-8",
	".json":     "application/json",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
}

// Sniff returns the media type of a file from its first bytes (head, up
// to 512) with net/http's content sniffing — never from what a client
// claims. It does not decompress anything: a zip or gzip file is
// application/zip or application/x-gzip whatever it is named. For bytes
// that are UTF-8 text a few extensions of name (Markdown, CSV, JSON, YAML)
// refine text/plain. SVG is never image/svg+xml: it sniffs as text/xml or
// text/plain, so it is never served as an image that could run script.
func Sniff(head []byte, name string) string {
	t := http.DetectContentType(head)
	if t != "text/plain; charset=utf-8" || !utf8Prefix(head) {
		return t
	}
	if k, ok := textTypes[strings.ToLower(path.Ext(name))]; ok {
		return k
	}
	return t
}

// utf8Prefix reports whether head is valid UTF-8 but for a rune cut at
// its end (head is the first 512 bytes of a longer file).
func utf8Prefix(head []byte) bool {
	for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
		if utf8.Valid(head) {
			return true
		}
		head = head[:len(head)-1]
	}
	return utf8.Valid(head)
}

// maxNameBytes caps a stored name (most file systems' limit).
const maxNameBytes = 255

// SanitizeName makes a client's file name safe to show and to put in a
// header: only its last path element (so "../../x" is "x"), without
// control or invisible formatting characters (a right-to-left override
// can make "gpj.exe" read as "exe.jpg"), trimmed, at most 255 bytes. An
// empty result, "." or ".." becomes "file".
func SanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if len(name) > maxNameBytes {
		cut := maxNameBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = strings.TrimSpace(name[:cut]) // the cut may end on a space
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}
