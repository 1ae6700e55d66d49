package agent

import "testing"

// FakeChat is the fake OpenAI-compatible chat server (fakeOpenAI) for the
// external tests that run the openai backend inside a hub: URL is its base
// URL, Request the body of the i-th chat completions request (nil if none).
type FakeChat struct {
	URL     string
	Request func(i int) map[string]any
}

// NewFakeChat starts a fake chat server answering each request with the
// next of the .sse fixtures in testdata.
func NewFakeChat(t *testing.T, sse ...string) FakeChat {
	script := make([]fakeReply, len(sse))
	for i, s := range sse {
		script[i] = fakeReply{sse: s}
	}
	f := newFakeOpenAI(t, script...)
	return FakeChat{URL: f.URL(), Request: f.request}
}
