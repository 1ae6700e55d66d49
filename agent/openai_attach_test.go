package agent

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
)

func testPNG(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 31)
	}
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func put(t testing.TB, s *attachments.Store, data []byte, name string) event.Attachment {
	t.Helper()
	a, err := s.Put(bytes.NewReader(data), name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// lastUser returns the content of the last message of a recorded request.
func lastUser(t *testing.T, req map[string]any) any {
	t.Helper()
	msgs := req["messages"].([]any)
	m := msgs[len(msgs)-1].(map[string]any)
	if m["role"] != "user" {
		t.Fatalf("last message is %v, want the user's", m["role"])
	}
	return m["content"]
}

// imageURLs lists the image_url parts of every message of a request.
func imageURLs(req map[string]any) []string {
	var out []string
	for _, m := range req["messages"].([]any) {
		parts, ok := m.(map[string]any)["content"].([]any)
		if !ok {
			continue
		}
		for _, p := range parts {
			p := p.(map[string]any)
			if p["type"] == "image_url" {
				out = append(out, p["image_url"].(map[string]any)["url"].(string))
			}
		}
	}
	return out
}

func TestOpenAISendsImagesWithVision(t *testing.T) {
	store, err := attachments.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	img := testPNG(t, 16, 16)
	pic := put(t, store, img, "chart.png")
	notes := put(t, store, []byte("# Minutes\n\nLaunch on Friday.\n"), "minutes.md")
	req := Request{Turn: "t1", Channel: "web", Content: "what is in these?", Attachments: []event.Attachment{pic, notes}}

	for _, vision := range []bool{true, false} {
		f := newFakeOpenAI(t, fakeReply{sse: "ollama_plain.sse"})
		o, _ := newTestOpenAI(t, f.URL(), func(o *OpenAIOptions) { o.Vision, o.Files = vision, store })
		if _, err := o.Run(testCtx(t), req, newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		got := f.request(0)
		urls := imageURLs(got)
		if !vision {
			text, ok := lastUser(t, got).(string)
			if !ok || len(urls) != 0 {
				t.Fatalf("vision off: content %T with %d images, want text only", lastUser(t, got), len(urls))
			}
			if !strings.Contains(text, `[image attached: "chart.png" (image/png, `) || !strings.Contains(text, "not shown images") ||
				!strings.Contains(text, "Launch on Friday.") {
				t.Errorf("vision off: text %q does not name the image and carry the notes", text)
			}
			continue
		}
		parts, ok := lastUser(t, got).([]any)
		if !ok || len(urls) != 1 {
			t.Fatalf("vision on: content %v with %d images, want parts with one image", lastUser(t, got), len(urls))
		}
		text := parts[0].(map[string]any)["text"].(string)
		if !strings.Contains(text, "what is in these?") || !strings.Contains(text, "Launch on Friday.") {
			t.Errorf("text part %q lacks the input or the Markdown file", text)
		}
		b64, ok := strings.CutPrefix(urls[0], "data:image/png;base64,")
		dec, err := base64.StdEncoding.DecodeString(b64)
		if !ok || err != nil || !bytes.Equal(dec, img) {
			t.Errorf("image part is not the PNG as a data: URL (%.40s…, %v)", urls[0], err)
		}
	}
}

// Hostile files never reach the model whole: a zip bomb named .txt is
// not text (and is never unpacked), and big text is cut to the budgets.
func TestOpenAITextBudget(t *testing.T) {
	store, _ := attachments.Open(t.TempDir(), 0)
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("a.txt")
	io.CopyN(w, strings.NewReader(strings.Repeat("0", 10<<20)), 10<<20)
	zw.Close()
	bomb := put(t, store, zb.Bytes(), "notes.txt")
	big := make([]event.Attachment, 3)
	for i := range big {
		big[i] = put(t, store, []byte(strings.Repeat(string(rune('a'+i)), 100<<10)), "log"+string(rune('1'+i))+".txt")
	}
	pdf := put(t, store, []byte("%PDF-1.4\n1 0 obj\n<<>>\nendobj\n"), "plan.pdf")

	f := newFakeOpenAI(t, fakeReply{sse: "ollama_plain.sse"})
	o, _ := newTestOpenAI(t, f.URL(), func(o *OpenAIOptions) { o.Vision, o.Files, o.ContextBudgetTokens = true, store, 100000 })
	req := Request{Turn: "t1", Channel: "web", Content: "read these", Attachments: append([]event.Attachment{bomb, pdf}, big...)}
	if _, err := o.Run(testCtx(t), req, newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	text, ok := lastUser(t, f.request(0)).(string)
	if !ok {
		t.Fatalf("content %T, want text (no images)", lastUser(t, f.request(0)))
	}
	if !strings.Contains(text, `"notes.txt" (application/zip, `) || strings.Contains(text, "0000000000") {
		t.Errorf("the zip bomb was given as text")
	}
	if !strings.Contains(text, `"plan.pdf" (application/pdf, `) {
		t.Errorf("the PDF is not named")
	}
	if n := strings.Count(text, "a"); n < textFileBytes || n > textFileBytes+200 {
		t.Errorf("first file: %d bytes of it given, want the first %d", n, textFileBytes)
	}
	if n := strings.Count(text, "b"); n < textTurnBytes-textFileBytes || n > textTurnBytes-textFileBytes+200 {
		t.Errorf("second file: %d bytes of it given, want %d", n, textTurnBytes-textFileBytes)
	}
	if strings.Contains(text, "ccc") || !strings.Contains(text, `"log3.txt" (text/plain; charset=utf-8, 100.0 KiB); left out`) {
		t.Errorf("third file: not left out for the spent budget")
	}
	if !strings.Contains(text, `the rest of "log1.txt" was left out`) {
		t.Errorf("the cut is not marked")
	}
	if len(text) > textTurnBytes+4096 {
		t.Errorf("%d bytes of text reached the model, want at most the budget and some lines", len(text))
	}
}

// The newest earlier message with images is resent with vision on; older
// images are only named.
func TestOpenAIResendsRecentImages(t *testing.T) {
	store, _ := attachments.Open(t.TempDir(), 0)
	old := put(t, store, testPNG(t, 4, 4), "old.png")
	recent := put(t, store, testPNG(t, 5, 5), "recent.png")
	ts := time.Now()
	req := Request{Turn: "t9", Channel: "web", Content: "and the left corner?", Context: []event.Event{
		event.New(event.User, "t1", ts, event.UserData{Channel: "web", Content: "first", Attachments: []event.Attachment{old}}),
		event.New(event.Assistant, "t1", ts, event.AssistantData{Content: "ok"}),
		event.New(event.User, "t3", ts, event.UserData{Channel: "web", Content: "second", Attachments: []event.Attachment{recent}}),
		event.New(event.Assistant, "t3", ts, event.AssistantData{Content: "a chart"}),
	}}
	f := newFakeOpenAI(t, fakeReply{sse: "ollama_plain.sse"})
	o, _ := newTestOpenAI(t, f.URL(), func(o *OpenAIOptions) { o.Vision, o.Files = true, store })
	if _, err := o.Run(testCtx(t), req, newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	urls := imageURLs(f.request(0))
	if len(urls) != 1 {
		t.Fatalf("%d images sent, want 1 (the recent one)", len(urls))
	}
	b, _ := json.Marshal(f.request(0))
	if !strings.Contains(string(b), `[image attached: \"old.png\"`) {
		t.Errorf("the old image is not named in text")
	}
}
