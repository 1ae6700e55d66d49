package email

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseTestdata(t *testing.T) {
	tests := []struct {
		file, from, subject string
		want                []string // substrings of Text
		not                 []string // must not appear in Text
	}{
		{"windows-1252.eml", "ana@example.com", "“Quotes” and €", []string{"It costs 5 € – “smart” quotes."}, nil},
		{"shift_jis.eml", "ana@example.com", "日本語", []string{"こんにちは、元気ですか？"}, nil},
		{"alternative.eml", "bob@example.org", "both", []string{"the plain version"}, []string{"HTML"}},
		{"html-only.eml", "bob@example.org", "HTML",
			[]string{"Dear assistant,", "please summarise the quarterly report (https://example.org/report) & reply.", "- first\n- second", "  keep   spacing"},
			[]string{"IGNORE", "tiny hidden", "invisible", "aria hidden", "vis hidden", "fetch(", "tracker", "comment", "old stuff", "quoted stuff", "display:none"}},
		{"attachment.eml", "ana@example.com", "with attachment", []string{"the real body"}, []string{"attached notes"}},
		{"unknown-charset.eml", "ana@example.com", "odd", []string{"plain ascii survives"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseMail(raw)
			if err != nil {
				t.Fatal(err)
			}
			if m.From != tc.from || m.ReturnPath != tc.from || !m.HasReturnPath {
				t.Errorf("from %q return path %q, want %q", m.From, m.ReturnPath, tc.from)
			}
			if m.Subject != tc.subject {
				t.Errorf("subject %q, want %q", m.Subject, tc.subject)
			}
			for _, w := range tc.want {
				if !strings.Contains(m.Text, w) {
					t.Errorf("text %q lacks %q", m.Text, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(m.Text, n) {
					t.Errorf("text %q contains %q", m.Text, n)
				}
			}
			if m.MessageID == "" {
				t.Error("no Message-ID")
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	header := "From: ana@example.com\r\nReturn-Path: <ana@example.com>\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
	tests := []struct {
		name       string
		raw        string
		wantText   string
		wantCapped bool
		maxParts   int
	}{
		{"deep", header + "Content-Type: multipart/mixed; boundary=b0\r\n\r\n" + nested(5000, "bottom"), "", true, maxDepth + 1},
		{"depth at the limit", header + "Content-Type: multipart/mixed; boundary=b0\r\n\r\n" + nested(maxDepth-1, "reachable"), "reachable", false, maxDepth + 1},
		{"ten thousand parts", header + "Content-Type: multipart/mixed; boundary=wide\r\n\r\n" + strings.Replace(manyParts(10000), "part 0 text", "", 1), "", true, maxParts + 1},
		// Parts after the text are looked at too (they may be files), up to the limit.
		{"thousand parts, text first", header + "Content-Type: multipart/mixed; boundary=wide\r\n\r\n" + manyParts(1000), "part 0 text", true, maxParts + 1},
		{"no boundary", header + "Content-Type: multipart/mixed\r\n\r\nwhatever", "", false, 1},
		{"unterminated", header + "Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\ncut off", "cut off", false, 2},
		{"binary junk", header + "\r\n\x00\x01\xff\xfe text \x1b[31m", "\uFFFD text [31m", false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			m, err := parseMail([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if m.Text != tc.wantText || m.Capped != tc.wantCapped {
				t.Errorf("text %q capped %v, want %q capped %v", m.Text, m.Capped, tc.wantText, tc.wantCapped)
			}
			if m.Parts > tc.maxParts {
				t.Errorf("looked at %d parts, want at most %d", m.Parts, tc.maxParts)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestTrimQuoted(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"gmail", "Sure, 3pm.\n\nOn Tue, 4 Mar 2026 at 09:12, Bot <a@b.c> wrote:\n> when?\n", "Sure, 3pm."},
		{"gmail wrapped", "Yes.\n\nOn Tue, 4 Mar 2026 at 09:12, Frontdesk Assistant\n<assistant@example.com> wrote:\n> x", "Yes."},
		{"outlook", "Fine.\n\n-----Original Message-----\nFrom: x\nSent: y\n\nold", "Fine."},
		{"outlook rule", "Fine.\n\n________________________________\nFrom: Bot <a@b.c>\nSent: Tuesday", "Fine."},
		{"french", "Oui.\n\nLe mar. 4 mars 2026 à 09:12, Bot <a@b.c> a écrit :\n> q", "Oui."},
		{"german", "Ja.\n\nAm 04.03.2026 um 09:12 schrieb Bot <a@b.c>:\n> q", "Ja."},
		{"interleaved", "> question one\nanswer one\n> question two\nanswer two", "answer one\nanswer two"},
		{"signature", "Thanks!\n-- \nAna\nCEO", "Thanks!"},
		{"only quotes kept", "> just a quote", "> just a quote"},
		{"forward kept", "Please summarise.\n\n---------- Forwarded message ---------\nFrom: x\n\nbody", "Please summarise.\n\n---------- Forwarded message ---------\nFrom: x\n\nbody"},
		{"on without wrote", "On second thought, no.", "On second thought, no."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := trimQuoted(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalizeText(t *testing.T) {
	in := "a\r\nb\u200b\u202ec\x07  \n\n\n\nd\t"
	if got, want := normalizeText(in), "a\nbc\n\nd"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestHTMLToText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"paragraphs", "<p>one</p><p>two</p>", "one\n\ntwo"},
		{"br and spaces", "a<br>b   c\n d", "a\nb c d"},
		{"entities", "&lt;tag&gt; &amp; &eacute;", "<tag> & é"},
		{"link same as text", `<a href="https://x.example">https://x.example</a>`, "https://x.example"},
		{"javascript link", `<a href="javascript:alert(1)">click</a>`, "click"},
		{"unclosed", "<div><p>open <b>bold", "open bold"},
		{"style hidden important", `<p style="DISPLAY: none !important">x</p>y`, "y"},
		{"zero height", `<div style="max-height:0px;overflow:hidden">x</div>y`, "y"},
		{"table", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"},
		{"title dropped", "<html><head><title>T</title></head><body>b</body></html>", "b"},
		{"shallow enough", strings.Repeat("<div>", 400) + "fine" + strings.Repeat("</div>", 400), "fine"},
		{"deeper than the parser allows", strings.Repeat("<div>", 100000) + "deep" + strings.Repeat("</div>", 100000), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := htmlToText(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScreen(t *testing.T) {
	c := &Channel{self: botAddr}
	var err error
	if c.allow, err = parseAllowList([]string{"Ana@Example.com", "@example.org"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"allowed address, any case", newMail("ANA@example.COM", "s", "b"), ""},
		{"allowed domain", newMail(bob, "s", "b"), ""},
		{"subdomain is not the domain", newMail("eve@mail.example.org", "s", "b"), SkipNotAllowed},
		{"lookalike domain", newMail("ana@example.com.evil.test", "s", "b"), SkipNotAllowed},
		{"display name spoof", newMail(mallory, "s", "b", `From: "ana@example.com" <mallory@example.net>`), SkipNotAllowed},
		{"auto-submitted with comment", newMail(ana, "s", "b", "Auto-Submitted: auto-replied (vacation)"), SkipAutoSubmitted},
		{"auto-submitted No", newMail(ana, "s", "b", "Auto-Submitted: No"), ""},
		{"precedence case", newMail(ana, "s", "b", "Precedence:  BULK "), SkipPrecedence},
		{"precedence first-class", newMail(ana, "s", "b", "Precedence: first-class"), ""},
		{"list-post", newMail(ana, "s", "b", "List-Post: <mailto:l@example.com>"), SkipList},
		{"own address in return path", newMail(ana, "s", "b", "Return-Path: <assistant@example.com>"), SkipOwnAddress},
		{"postmaster envelope", newMail(ana, "s", "b", "Return-Path: <postmaster@example.com>"), SkipMailerDaemon},
		{"no from", newMail(ana, "s", "b", "From: -"), SkipBadFrom},
		{"x-autorespond", newMail(ana, "s", "b", "X-Autorespond: yes"), SkipAutoSubmitted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMail([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.screen(m); got != tc.want {
				t.Errorf("screen = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRateLimiter(t *testing.T) {
	r := newRateLimiter(2, time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", time.Minute, true}, {"a", 2 * time.Minute, false}, {"b", 2 * time.Minute, true},
		{"a", time.Hour, true}, {"a", time.Hour + time.Second, false}, {"a", time.Hour + time.Minute, true},
	}
	for i, s := range steps {
		if got := r.allow(s.key, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d (%s at %v): allow = %v, want %v", i, s.key, s.at, got, s.want)
		}
	}
	if unlimited := newRateLimiter(0, time.Hour); !unlimited.allow("x", t0) {
		t.Error("0 must mean no limit")
	}
}

func TestReplySubject(t *testing.T) {
	for in, want := range map[string]string{
		"Lunch": "Re: Lunch", "Re: Lunch": "Re: Lunch", "RE:Lunch": "Re: Lunch", "": "Re: your message", "Ready?": "Re: Ready?",
	} {
		if got := replySubject(in); got != want {
			t.Errorf("replySubject(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildMessageHeaders(t *testing.T) {
	it := outboxItem{From: botAddr, To: ana, Subject: "Re: Café ☕", MessageID: "x1@example.com",
		InReplyTo: "orig@test", References: []string{"root@test", "orig@test"}, Body: "line one\nline two " + strings.Repeat("long ", 40)}
	raw, err := buildMessage(it, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{"Message-Id: <x1@example.com>", "In-Reply-To: <orig@test>", "References: <root@test> <orig@test>",
		"Auto-Submitted: auto-replied", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: quoted-printable"} {
		if !strings.Contains(s, want) {
			t.Errorf("message lacks %q:\n%s", want, s)
		}
	}
	for i, l := range strings.Split(s, "\r\n") {
		if len(l) > 998 {
			t.Errorf("line %d is %d bytes long", i, len(l))
		}
	}
	m, err := parseMail(raw)
	if err != nil || m.Subject != "Re: Café ☕" || !strings.HasPrefix(m.Text, "line one\nline two long") {
		t.Fatalf("round trip: %+v, %v", m, err)
	}
}

func TestParseReturnPath(t *testing.T) {
	for in, want := range map[string]string{
		"<Ana@Example.com>": "ana@example.com", "<>": "", " < > ": "", "ana@example.com": "ana@example.com", "<a@b.c> (comment)": "a@b.c",
	} {
		if got := parseReturnPath(in); got != want {
			t.Errorf("parseReturnPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseMail: any input parses without panicking, in bounded time,
// into valid UTF-8 text.
func FuzzParseMail(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.eml"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(newMail(ana, "s", "b")))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=b0\r\n\r\n" + nested(20, "x")))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMail(raw)
		if err != nil {
			return
		}
		if !utf8.ValidString(m.Text) || !utf8.ValidString(m.Subject) {
			t.Fatalf("invalid UTF-8 out: %q / %q", m.Subject, m.Text)
		}
		if m.Parts > maxParts+1 {
			t.Fatalf("walked %d parts", m.Parts)
		}
		c := &Channel{self: botAddr}
		c.allow, _ = parseAllowList([]string{ana})
		_ = c.screen(m)
	})
}

// FuzzHTMLToText: hostile HTML never panics and yields valid UTF-8.
func FuzzHTMLToText(f *testing.F) {
	for _, s := range []string{"<p>a</p>", "<script>x</script>y", `<div style="display:none">h</div>`, "<a href=https://x>y</a>", "<pre>  x</pre>", "<<<>>>&amp;&#0;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if out := htmlToText(s); !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out: %q", out)
		}
	})
}

func TestAllowList(t *testing.T) {
	a, err := parseAllowList([]string{"ana@example.com", "@Example.org"})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"ana@example.com": true, "bob@example.org": true, "eve@sub.example.org": false, "ana@example.org.evil": false, "": false,
	} {
		if got := a.allowed(addr); got != want {
			t.Errorf("allowed(%q) = %v, want %v", addr, got, want)
		}
	}
	for _, bad := range [][]string{nil, {"example.com"}, {"@"}, {"Ana <ana@example.com>"}} {
		if _, err := parseAllowList(bad); err == nil {
			t.Errorf("parseAllowList(%q) accepted", bad)
		}
	}
}
