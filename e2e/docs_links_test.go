package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdAnchor  = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// slug is the anchor GitHub gives a heading.
func slug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.ReplaceAll(h, "`", "")
	return strings.ReplaceAll(slugDrop.ReplaceAllString(h, ""), " ", "-")
}

// Every relative link in README.md and docs/ names a file that exists and,
// with #anchor, a heading of it (or an <a id>): a newcomer following the front door never
// lands on nothing.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	anchors := map[string]map[string]bool{}
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		a := map[string]bool{}
		text := mdFence.ReplaceAllString(string(b), "") // a "# comment" in a code block is no heading
		for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
			a[slug(m[1])] = true
		}
		for _, m := range mdAnchor.FindAllStringSubmatch(text, -1) {
			a[m[1]] = true
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
			}
			checked++
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %q: %s does not exist", f, link, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !headings(target)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, link, target, anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links, want the docs' many (is the pattern wrong?)", checked)
	}
}
