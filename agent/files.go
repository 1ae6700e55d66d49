package agent

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Files gives backends the bytes of attachments. *attachments.Store
// implements it (main wires it in). Its methods may be called from any
// goroutine.
type Files interface {
	// Open opens the stored file named sha256; the caller closes it.
	Open(sha256 string) (*os.File, event.Attachment, error)
	// Path is the stored file's path (for programs run by the command backend).
	Path(sha256 string) string
}

// Budgets for text files given to a model as text: each file is cut at
// textFileBytes, and all of one turn's at textTurnBytes, so a large log
// (or a zip bomb named .txt, which is never text by its bytes anyway)
// cannot crowd out the conversation.
const (
	textFileBytes = 32 << 10
	textTurnBytes = 64 << 10
)

// readPrefix reads at most limit bytes of the file named sha as text: valid
// UTF-8 (a rune cut by the limit is dropped), and whether the file held more.
func readPrefix(files Files, sha string, limit int) (string, bool, error) {
	f, _, err := files.Open(sha)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", false, err
	}
	more := len(b) > limit
	if more {
		b = b[:limit]
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), more, nil
}

// attachmentText is what a model reads about a message's attachments:
// text files inline (within *budget, which it spends), a line naming every
// other file. images says the model also gets the images themselves.
// files may be nil: then only the lines are written.
func attachmentText(atts []event.Attachment, files Files, budget *int, images bool) string {
	var b strings.Builder
	for _, a := range atts {
		switch {
		case a.Image() && images:
			fmt.Fprintf(&b, "\n[image attached: %s; it follows this text]", a.Describe())
		case a.Image():
			fmt.Fprintf(&b, "\n[image attached: %s; you are not shown images here]", a.Describe())
		case a.Text() && files != nil && budget != nil && *budget > 0:
			text, more, err := readPrefix(files, a.SHA256, min(textFileBytes, *budget))
			if err != nil {
				fmt.Fprintf(&b, "\n[file attached: %s; it could not be read: %v]", a.Describe(), err)
				continue
			}
			*budget -= len(text)
			fmt.Fprintf(&b, "\n[file attached: %s; its text follows]\n%s", a.Describe(), text)
			if more {
				fmt.Fprintf(&b, "\n[… the rest of %q was left out: only the first %s are given]", a.Name, event.FormatSize(int64(len(text))))
			}
			fmt.Fprintf(&b, "\n[end of %q]", a.Name)
		case a.Text() && files != nil && budget != nil:
			fmt.Fprintf(&b, "\n[file attached: %s; left out: this message's text budget is spent]", a.Describe())
		default:
			fmt.Fprintf(&b, "\n[file attached: %s; its content is not shown to you]", a.Describe())
		}
	}
	return b.String()
}
