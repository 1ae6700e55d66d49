package console

import (
	"io"
	"sync"

	"github.com/ergochat/readline"
)

// screen is readline's Stdout: the terminal, and the one place where
// readline's prompt changes.
//
// readline redraws after every write through it: it erases what it drew
// last — going up as many rows as its prompt and the typed line took,
// which it measures from the prompt it has now — writes, and draws the
// prompt and the typed line again. Its measure is right only for the
// prompt that is on the screen: a prompt changed between a draw and the
// next erase (SetConfig, as the console used to do when a reply ended)
// makes the erase go up a row too many, or too few, whenever one of the
// two prompts wraps where the other does not. Up a row too many, and
// clearing to the end of the screen, erased a reply whose last row ended
// in the last few columns.
//
// So the prompt changes only here, inside readline's write: after the
// erase and before the draw, both of which then measure the prompt that
// is on the screen. readline calls Write for its own drawing too; the
// change happens in the write of the bytes the printer handed it.
type screen struct {
	w  io.Writer // the terminal
	rl *readline.Instance

	mu   sync.Mutex // Write runs on readline's goroutines too
	live *readline.Config
	at   *byte  // the first byte of the write that changes the prompt
	next string // the prompt from that write on
}

// Write is readline's Stdout and Stderr.
func (s *screen) Write(b []byte) (int, error) {
	s.mu.Lock()
	if s.at != nil && len(b) > 0 && &b[0] == s.at {
		// readline reads its prompt only under a lock it holds now.
		s.live.Prompt, s.at = s.next, nil
	}
	s.mu.Unlock()
	return s.w.Write(b)
}

// setPrompt writes b (not empty) through readline and makes prompt
// readline's prompt from that write on; interrupt is what Ctrl-C adds to
// the line. Calls are serialised by the printer's lock.
func (s *screen) setPrompt(b []byte, prompt, interrupt string) {
	if s.live == nil || s.live.InterruptPrompt != interrupt {
		// SetConfig installs a copy, a config readline has not read
		// yet; the prompt is left as it is on the screen.
		c := s.rl.GetConfig()
		c.InterruptPrompt = interrupt
		if err := s.rl.SetConfig(c); err == nil {
			s.mu.Lock()
			s.live = c
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.at, s.next = &b[0], prompt
	s.mu.Unlock()
	_, _ = s.rl.Write(b)
	s.mu.Lock()
	s.at = nil // not seen (a failed write): the prompt stays
	s.mu.Unlock()
}
