package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxStdioLine caps one JSON-RPC line on stdin. A longer line is answered
// with a parse error and skipped, never buffered whole.
const maxStdioLine = 4 << 20

// ServeStdio serves s over stdio-style streams (newline-delimited JSON-RPC)
// until the client closes in or ctx ends. At the end of in it first
// answers every request it has read, then returns. A line that is not
// JSON-RPC is answered with a parse error (-32700) and the next line is
// read; a batch (a JSON array) is answered with -32600: MCP 2025-06-18
// dropped JSON-RPC batching.
func ServeStdio(ctx context.Context, s *sdk.Server, in io.Reader, out io.Writer) error {
	err := s.Run(ctx, &stdioTransport{in: in, out: out})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client went away, or we were asked to stop
	}
	return err
}

type stdioTransport struct {
	in  io.Reader
	out io.Writer
}

func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{out: t.out, incoming: make(chan jsonrpc.Message), eof: make(chan error, 1),
		closed: make(chan struct{}), pending: map[jsonrpc.ID]bool{}, idle: make(chan struct{}, 1)}
	go c.readLoop(t.in)
	return c, nil
}

// stdioConn is the server's side of a stdio connection. It counts the
// requests read and not yet answered, so that the end of input does not
// end the session while answers are still owed.
type stdioConn struct {
	out      io.Writer
	incoming chan jsonrpc.Message
	eof      chan error // the reader's last error (io.EOF at the end of input)
	closed   chan struct{}
	close    sync.Once

	mu      sync.Mutex // guards out and pending
	pending map[jsonrpc.ID]bool
	idle    chan struct{} // signalled when pending becomes empty
}

// readLoop reads lines until the end of in, answering the ones that are
// not JSON-RPC messages itself.
func (c *stdioConn) readLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if line = bytes.TrimSpace(line); len(line) > 0 || tooLong {
			var msg jsonrpc.Message
			switch {
			case tooLong:
				c.writeError(jsonrpc.CodeParseError, fmt.Sprintf("parse error: the line is longer than %d bytes", maxStdioLine))
			case line[0] == '[':
				c.writeError(jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 dropped them); send one message a line")
			default:
				var derr error
				if msg, derr = jsonrpc.DecodeMessage(line); derr != nil {
					c.writeError(jsonrpc.CodeParseError, "parse error: "+derr.Error())
					msg = nil
				}
			}
			if msg != nil {
				if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
					c.mu.Lock()
					c.pending[req.ID] = true
					c.mu.Unlock()
				}
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.eof <- err
			return
		}
	}
}

// readLine reads one line of at most maxStdioLine bytes; the rest of a
// longer line is read and dropped.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := r.ReadLine()
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxStdioLine {
				line, tooLong = nil, true
			}
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

// Read returns the next message. At the end of input it waits until every
// request read has been answered, then reports io.EOF.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case err := <-c.eof:
		c.eof <- err // for a later Read
		for !c.answered() {
			select {
			case <-c.idle:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.closed:
				return nil, io.EOF
			}
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("read stdin: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) answered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) == 0
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.out.Write(append(b, '\n'))
	if res, ok := msg.(*jsonrpc.Response); ok && c.pending[res.ID] {
		delete(c.pending, res.ID)
		if len(c.pending) == 0 {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
	}
	return err
}

// writeError answers a line that is no message: id null, as JSON-RPC 2.0
// has it when the request's id cannot be known.
func (c *stdioConn) writeError(code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.out.Write(append(b, '\n'))
}

func (c *stdioConn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
