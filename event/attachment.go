package event

import (
	"fmt"
	"strings"
)

// Image reports whether a is an image that models take and browsers show
// inline: PNG, JPEG, GIF or WebP (as sniffed from its bytes). No other
// type is ever served inline or sent to a model as an image.
func (a Attachment) Image() bool {
	switch a.Type {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// Text reports whether a is UTF-8 text that may be given to a model as it
// is: text/* in UTF-8 (plain, Markdown, CSV, HTML, XML, source code),
// JSON and YAML.
func (a Attachment) Text() bool {
	switch {
	case a.Type == "application/json", a.Type == "application/yaml":
		return true
	case strings.HasPrefix(a.Type, "text/"):
		return strings.HasSuffix(a.Type, "charset=utf-8")
	}
	return false
}

// Describe is a for people and models: `"plan.pdf" (application/pdf, 1.2 MiB)`.
func (a Attachment) Describe() string {
	return fmt.Sprintf("%q (%s, %s)", a.Name, a.Type, FormatSize(a.Size))
}

// FormatSize is n bytes for people: "812 B", "1.2 KiB", "5.0 MiB".
func FormatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
