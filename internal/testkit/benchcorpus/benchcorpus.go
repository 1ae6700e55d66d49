// Package benchcorpus makes the one-million-event chat log the history
// and index benchmarks share. Only tests import it.
package benchcorpus

import (
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// The benchmark corpus: Events chat-log lines (user questions,
// assistant answers, turn ends, now and then a tool call and its result),
// written through Open with RotateMB 5 and Fsync never, so the parts are
// exactly what the server makes; then one part is gzipped (as a user might)
// and its plain file removed. It is generated once into
// os.TempDir()/frontdesk-bench-corpus-v2 and reused; an incomplete corpus
// (no "complete" marker) is made again.
const (
	// Events is how many events the corpus holds.
	Events     = 1_000_000
	rotateMB   = 5
	corpusName = "frontdesk-bench-corpus-v2"
	// Rare occurs in RareCount messages spread over the whole log.
	Rare      = "Kilimanjaro"
	RareCount = 12
)

// start is the first event's time; events are 1.5 s apart.
var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

var corpusOnce struct {
	sync.Once
	path string
	err  error
}

// Path returns the corpus's live file, generating it if needed. It skips
// the benchmark in -short mode.
func Path(b testing.TB) string {
	if testing.Short() {
		b.Skip("the benchmark corpus is big; skipped in -short mode")
	}
	corpusOnce.Do(func() {
		corpusOnce.path, corpusOnce.err = makeCorpus(filepath.Join(os.TempDir(), corpusName), b)
	})
	if corpusOnce.err != nil {
		b.Fatal(corpusOnce.err)
	}
	return corpusOnce.path
}

func makeCorpus(dir string, b testing.TB) (string, error) {
	live := filepath.Join(dir, "chat_history.ndjson")
	marker := filepath.Join(dir, "complete")
	if _, err := os.Stat(marker); err == nil {
		return live, nil
	}
	began := time.Now()
	tmp, err := os.MkdirTemp(os.TempDir(), corpusName+"-tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone after the rename unless something failed
	l, err := history.Open(history.Options{Path: filepath.Join(tmp, "chat_history.ndjson"), RotateMB: rotateMB, Fsync: history.FsyncNever})
	if err != nil {
		return "", err
	}
	// Text is made on two goroutines, in order, while this one appends.
	chunks := make(chan *chunk, 8)
	go generate(chunks)
	if err := appendAll(l, chunks); err != nil {
		l.Close()
		return "", err
	}
	if err := l.Close(); err != nil {
		return "", err
	}
	// Gzip the third-oldest part, as a user tidying up would.
	parts, err := history.Parts(filepath.Join(tmp, "chat_history.ndjson"))
	if err != nil || len(parts) < 4 {
		return "", fmt.Errorf("corpus has %d parts (%v)", len(parts), err)
	}
	if err := gzipFile(parts[len(parts)-3]); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), []byte(fmt.Sprintf("%d events\n", Events)), 0o600); err != nil {
		return "", err
	}
	os.RemoveAll(dir) // an incomplete one
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr == nil {
			return live, nil // another process finished first
		}
		return "", err
	}
	b.Logf("generated the corpus in %s (%v)", dir, time.Since(began).Round(time.Millisecond))
	return live, nil
}

// chunk is a batch of generated events; done is closed once evs is set.
type chunk struct {
	evs  []event.Event
	done chan struct{}
}

// corpusBatch is how many events one generated chunk holds (about).
const corpusBatch = 4096

// generate sends the corpus's events in order, in chunks made two at a
// time, then closes chunks.
func generate(chunks chan<- *chunk) {
	defer close(chunks)
	sem := make(chan struct{}, 2)
	turn := 0
	for seq := int64(1); seq <= Events; {
		c := &chunk{done: make(chan struct{})}
		from, firstTurn := seq, turn
		// Turns have 3 or 5 events: plan the batch's turns here so
		// that seqs and turn numbers carry on across batches.
		n := 0
		var plan []int
		for n < corpusBatch && seq+int64(n) <= Events {
			k := 3
			if rand.New(rand.NewPCG(uint64(turn+len(plan)), 7)).IntN(20) == 0 {
				k = 5
			}
			plan = append(plan, k)
			n += k
		}
		seq += int64(n)
		turn += len(plan)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; close(c.done) }()
			c.evs = genTurns(from, firstTurn, plan)
		}()
		chunks <- c
	}
}

// appendAll appends the chunks' events to l in order, Events in all.
func appendAll(l *history.Log, chunks <-chan *chunk) error {
	var written int64
	for c := range chunks {
		<-c.done
		for _, e := range c.evs {
			if written == Events {
				break
			}
			if err := l.Append(e); err != nil {
				for range chunks { // let the generator finish
				}
				return err
			}
			written++
		}
	}
	return nil
}

func gzipFile(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path+".gz", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	_, err = zw.Write(in)
	if err = errors.Join(err, zw.Close(), f.Close()); err != nil {
		return err
	}
	return os.Remove(path)
}

var (
	benchTopics = []string{
		"the quarterly report", "the budget review", "the Berlin offsite", "the server migration",
		"my dentist appointment", "the Zürich trip", "the café order for Friday", "invoice 4471",
		"the new hire's onboarding", "the marketing plan", "Q3 hiring", "the customer escalation",
		"the database backup", "our pricing page", "the conference talk", "the kitchen renovation",
		"the tax return", "the team lunch", "the release notes", "the security audit",
	}
	benchWhen  = []string{"Monday", "Tuesday", "last week", "yesterday", "this morning", "in March", "before the holidays"}
	benchNames = []string{"Alice", "Bob", "Chen", "Dmitri", "Élodie", "Fatima", "Gustavo", "Hiro", "Ingrid", "José"}
	benchAsk   = []string{
		"Can you remind me what we decided about {topic} {when}?",
		"Please draft a short email to {name} about {topic}.",
		"What's the status of {topic}? I need it by {when}.",
		"Summarise everything {name} said about {topic}.",
		"Did we agree on a deadline for {topic} {when}?",
		"I'm worried about {topic} — what are the risks?",
		"Compare the two options for {topic} & tell me which is cheaper.",
	}
	benchAnswer = []string{
		"Sure. About {topic}: you decided {when} to move forward, pending approval from {name}.",
		"Here is a draft: \"Hi {name}, a quick update on {topic} — details below.\"",
		"{topic} is on track; the next step is due {when} and {name} owns it.",
		"The main risks for {topic} are cost and timing; {name} flagged both {when}.",
		"Option A for {topic} costs less up front, option B is cheaper over <3 years>, per {name}.",
	}
	benchWords = strings.Fields(`the of and to in is that it for on was with as be at by this
		had not are but from or have an they which one you were all we when there can
		been has more if will would about what some time could people into than them
		only other new years may first these any most also after made many before must
		through back where much should well between each those while state both life
		under never same another know last might great old year off come since against
		go came right used take three meeting schedule follow-up notes draft budget plan
		review numbers figures team project client invoice deadline priority summary
		naïve résumé café jalapeño 東京 straße`)
	benchTools = []string{"calendar_lookup", "web_search", "read_file", "send_email"}
)

// genTurns makes the events of the planned turns: each 3 events (user,
// assistant, turn_end) or 5 (with a tool call and its result).
func genTurns(seq int64, turn int, plan []int) []event.Event {
	var evs []event.Event
	add := func(t event.Type, id string, data any) {
		e := event.New(t, id, start.Add(time.Duration(seq)*1500*time.Millisecond), data)
		e.Seq = seq
		seq++
		evs = append(evs, e)
	}
	for i, k := range plan {
		n := turn + i
		rng := rand.New(rand.NewPCG(uint64(n), 42))
		id := fmt.Sprintf("t%d", n+1)
		topic := benchTopics[rng.IntN(len(benchTopics))]
		when := benchWhen[rng.IntN(len(benchWhen))]
		name := benchNames[rng.IntN(len(benchNames))]
		channel, from := event.ChannelWeb, ""
		switch rng.IntN(10) {
		case 0:
			channel, from = event.ChannelEmail, strings.ToLower(name)+"@example.com"
		case 1:
			channel = event.ChannelConsole
		case 2:
			channel, from = event.ChannelWebhook, "ci-bot"
		}
		words := strings.NewReplacer("{topic}", topic, "{when}", when, "{name}", name)
		ask := words.Replace(benchAsk[rng.IntN(len(benchAsk))])
		// The rare word, in RareCount messages spread evenly.
		if every := Events / 3 / RareCount; n%every == every/2 {
			ask += " And what about " + Rare + "?"
		}
		ask = fill(rng, ask)
		add(event.User, id, event.UserData{Channel: channel, From: from, Content: ask, ClientMsgID: fmt.Sprintf("c-%d", n+1)})
		if k == 5 {
			tool := benchTools[rng.IntN(len(benchTools))]
			callID := fmt.Sprintf("call_%d", n+1)
			add(event.ToolCall, id, event.ToolCallData{ID: callID, Name: tool, Args: []byte(fmt.Sprintf(`{"query":%q}`, topic))})
			add(event.ToolResult, id, event.ToolResultData{ID: callID, Name: tool, Output: fill(rng, "Results for "+topic+":")})
		}
		add(event.Assistant, id, event.AssistantData{Content: fill(rng, words.Replace(benchAnswer[rng.IntN(len(benchAnswer))]))})
		prompt, completion := 800+rng.IntN(4000), 20+rng.IntN(300)
		add(event.TurnEnd, id, event.TurnEndData{Status: event.StatusCompleted, DurationMS: int64(300 + rng.IntN(9000)),
			Usage: &event.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}})
	}
	return evs
}

// fill pads s with words to a length of 80 to 250 bytes.
func fill(rng *rand.Rand, s string) string {
	want := 80 + rng.IntN(171)
	var sb strings.Builder
	sb.WriteString(s)
	for sb.Len() < want {
		sb.WriteByte(' ')
		sb.WriteString(benchWords[rng.IntN(len(benchWords))])
		if rng.IntN(12) == 0 {
			sb.WriteByte("..,;!?"[rng.IntN(6)])
		}
	}
	out := sb.String()
	if len(out) > 250 {
		out = strings.ToValidUTF8(out[:250], "")
	}
	return out
}
