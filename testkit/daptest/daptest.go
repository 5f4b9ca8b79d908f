// Package daptest is a small Debug Adapter Protocol client over TCP, for tests that attach
// to a debug job's debugpy the way VS Code does: initialize, attach, set breakpoints,
// configurationDone, then follow stopped events and continue.
package daptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"sync"
)

// Message is one DAP message (request, response or event).
type Message struct {
	Seq        int             `json:"seq"`
	Type       string          `json:"type"`
	Command    string          `json:"command,omitempty"`
	Event      string          `json:"event,omitempty"`
	RequestSeq int             `json:"request_seq,omitempty"`
	Success    bool            `json:"success,omitempty"`
	Message    string          `json:"message,omitempty"`
	Arguments  any             `json:"arguments,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// Client speaks DAP to one adapter.
type Client struct {
	conn net.Conn

	mu        sync.Mutex
	seq       int
	waiting   map[int]chan *Message
	events    []*Message
	eventSeen chan struct{} // closed and replaced whenever an event arrives
	err       error         // why the reader stopped
}

// Dial connects to a debug adapter at addr.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dap: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, waiting: map[int]chan *Message{}, eventSeen: make(chan struct{})}
	go c.read()
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) read() {
	r := textproto.NewReader(bufio.NewReader(c.conn))
	for {
		m, err := readMessage(r)
		c.mu.Lock()
		if err != nil {
			c.err = err
			for _, ch := range c.waiting {
				close(ch)
			}
			c.waiting = nil
			close(c.eventSeen)
			c.mu.Unlock()
			return
		}
		switch m.Type {
		case "response":
			if ch, ok := c.waiting[m.RequestSeq]; ok {
				ch <- m
				delete(c.waiting, m.RequestSeq)
			}
		case "event":
			c.events = append(c.events, m)
			close(c.eventSeen)
			c.eventSeen = make(chan struct{})
		}
		c.mu.Unlock()
	}
}

func readMessage(r *textproto.Reader) (*Message, error) {
	h, err := r.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil || n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("dap: bad Content-Length %q", h.Get("Content-Length"))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.R, b); err != nil {
		return nil, err
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("dap: %w", err)
	}
	return &m, nil
}

// Pending is a request whose response has not been read yet.
type Pending struct {
	c       *Client
	command string
	ch      chan *Message
}

// Send sends a request and returns at once; Wait on the result reads its response.
func (c *Client) Send(command string, args any) (*Pending, error) {
	c.mu.Lock()
	if c.waiting == nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("dap: connection closed: %v", err)
	}
	c.seq++
	seq := c.seq
	ch := make(chan *Message, 1)
	c.waiting[seq] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(Message{Seq: seq, Type: "request", Command: command, Arguments: args})
	if _, err := fmt.Fprintf(c.conn, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		return nil, fmt.Errorf("dap: send %s: %w", command, err)
	}
	return &Pending{c: c, command: command, ch: ch}, nil
}

// Wait returns the response's body, or an error if the request failed.
func (p *Pending) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("dap: waiting for the %s response: %w", p.command, ctx.Err())
	case m, ok := <-p.ch:
		if !ok {
			return nil, fmt.Errorf("dap: connection closed before the %s response: %v", p.command, p.c.err)
		}
		if !m.Success {
			return nil, fmt.Errorf("dap: %s failed: %s %s", p.command, m.Message, m.Body)
		}
		return m.Body, nil
	}
}

// Request sends a request and waits for its response.
func (c *Client) Request(ctx context.Context, command string, args any) (json.RawMessage, error) {
	p, err := c.Send(command, args)
	if err != nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// Event waits for the first event called name not returned before, and returns its body.
func (c *Client) Event(ctx context.Context, name string) (json.RawMessage, error) {
	for {
		c.mu.Lock()
		for i, m := range c.events {
			if m.Event == name {
				c.events = append(c.events[:i], c.events[i+1:]...)
				c.mu.Unlock()
				return m.Body, nil
			}
		}
		seen, err := c.eventSeen, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("dap: connection closed before a %s event: %v", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dap: waiting for a %s event: %w", name, ctx.Err())
		case <-seen:
		}
	}
}

// Frame is a stack frame of a stopped thread.
type Frame struct {
	ID     int `json:"id"`
	Line   int `json:"line"`
	Source struct {
		Path string `json:"path"`
	} `json:"source"`
}

// StopAt attaches as VS Code does (initialize; attach with pathMappings; a breakpoint at
// file:line; configurationDone) and waits for the stop. It returns the stopped thread
// and its top frame.
func (c *Client) StopAt(ctx context.Context, pathMappings any, file string, line int) (int, Frame, error) {
	if _, err := c.Request(ctx, "initialize", map[string]any{"clientID": "kinetic-test", "adapterID": "debugpy", "pathFormat": "path", "linesStartAt1": true, "columnsStartAt1": true}); err != nil {
		return 0, Frame{}, err
	}
	attach, err := c.Send("attach", map[string]any{"justMyCode": false, "pathMappings": pathMappings})
	if err != nil {
		return 0, Frame{}, err
	}
	steps := []func() error{
		func() error { _, err := c.Event(ctx, "initialized"); return err },
		func() error {
			_, err := c.Request(ctx, "setBreakpoints", map[string]any{"source": map[string]any{"path": file}, "breakpoints": []map[string]any{{"line": line}}})
			return err
		},
		func() error { _, err := c.Request(ctx, "configurationDone", nil); return err },
		func() error { _, err := attach.Wait(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return 0, Frame{}, err
		}
	}
	raw, err := c.Event(ctx, "stopped")
	if err != nil {
		return 0, Frame{}, err
	}
	var stopped struct {
		ThreadID int `json:"threadId"`
	}
	json.Unmarshal(raw, &stopped)
	raw, err = c.Request(ctx, "stackTrace", map[string]any{"threadId": stopped.ThreadID})
	if err != nil {
		return 0, Frame{}, err
	}
	var trace struct {
		StackFrames []Frame `json:"stackFrames"`
	}
	json.Unmarshal(raw, &trace)
	if len(trace.StackFrames) == 0 {
		return 0, Frame{}, errors.New("stopped without a stack")
	}
	return stopped.ThreadID, trace.StackFrames[0], nil
}

// Evaluate returns the value of expr in a frame.
func (c *Client) Evaluate(ctx context.Context, frameID int, expr string) (string, error) {
	raw, err := c.Request(ctx, "evaluate", map[string]any{"expression": expr, "frameId": frameID, "context": "repl"})
	if err != nil {
		return "", err
	}
	var v struct {
		Result string `json:"result"`
	}
	err = json.Unmarshal(raw, &v)
	return v.Result, err
}
