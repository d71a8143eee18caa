package mcpproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectTimeout bounds starting a server and its initialize handshake.
const ConnectTimeout = 30 * time.Second

// Server says how to reach an MCP server: a command to start (stdio) or a
// streamable-HTTP URL.
type Server struct {
	Command []string
	Env     []string  // the command's whole environment (nil: none at all)
	Stderr  io.Writer // the command's stderr (nil: discarded)
	URL     string
	Token   string // bearer token for URL
	Version string // ours, in the handshake
}

// Connect starts or dials the server and initializes a session with it.
// The client declares no capabilities (no roots, no sampling): a file
// server then keeps to the directories it was started with.
func (s Server) Connect(ctx context.Context) (*mcp.ClientSession, error) {
	var t mcp.Transport
	switch {
	case len(s.Command) > 0:
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Env = s.Env
		if cmd.Env == nil {
			cmd.Env = []string{}
		}
		cmd.Stderr = s.Stderr
		t = &mcp.CommandTransport{Command: cmd}
	case s.URL != "":
		hc := &http.Client{}
		if s.Token != "" {
			hc.Transport = bearer{s.Token, http.DefaultTransport}
		}
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
	default:
		return nil, errors.New("neither a command nor a url to reach it")
	}
	version := s.Version
	if version == "" {
		version = "dev"
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "approval-gateway", Version: version},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	return c.Connect(ctx, t, nil)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// Shared is one session with a server for every agent's calls, connected
// on first use and again after it ends (the server exited, the network
// dropped).
type Shared struct {
	connect func(ctx context.Context) (*mcp.ClientSession, error)
	mu      sync.Mutex
	cs      *mcp.ClientSession
	closed  bool
}

// NewShared returns a Shared that connects with connect.
func NewShared(connect func(ctx context.Context) (*mcp.ClientSession, error)) *Shared {
	return &Shared{connect: connect}
}

// ErrClosed is returned by Session after Close.
var ErrClosed = errors.New("the gateway is shutting down")

// Session is the live session, connecting when there is none.
func (s *Shared) Session(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.cs != nil {
		return s.cs, nil
	}
	cs, err := s.connect(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	s.cs = cs
	go func() {
		_ = cs.Wait()
		s.mu.Lock()
		if s.cs == cs {
			s.cs = nil
		}
		s.mu.Unlock()
	}()
	return cs, nil
}

// Close ends the session (a command is stopped) and refuses new ones.
func (s *Shared) Close() {
	s.mu.Lock()
	cs := s.cs
	s.cs, s.closed = nil, true
	s.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}
