// Package mcpserver is the gateway as an MCP server (Model Context
// Protocol, with the official Go SDK): the tools an agent calls to ask
// before it acts.
//
//	approval_prompt   Claude Code's permission prompt tool
//	                  (claude -p --permission-prompt-tool mcp__gateway__approval_prompt):
//	                  {tool_name, input, tool_use_id} → {"behavior":"allow","updatedInput":…}
//	                  or {"behavior":"deny","message":…}
//	request_approval  ask about one action and wait for the finished request
//	check             what policy says now; nothing stored, no card
//
// It asks through a Backend, which *client.Client is: `gateway mcp` serves
// over stdio and talks to a gateway's HTTP API, and the gateway serves the
// same tools over streamable HTTP at /mcp, where each call acts as the
// agent whose token it carries. The package knows nothing of either side's
// wiring.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/internal/duration"
)

// Name is the server name agents see; Claude Code names the tools
// mcp__<the name in its MCP config>__<tool>, and the docs use "gateway".
const Name = "gateway"

// DefaultWait is how long request_approval waits for a person when the
// call gives no timeout: the gateway's default approvals.timeout.
const DefaultWait = 10 * time.Minute

// MaxWait bounds request_approval's timeout (the gateway clamps a
// request's timeout to 24 h as well).
const MaxWait = 24 * time.Hour

// MinWait is the shortest timeout request_approval takes: the gateway's
// shortest request timeout (approvals.MinTimeout), so that a request
// nobody answers has expired by the time the call gives up, and the call
// answers expired, as its description says, never a withdrawal.
const MinWait = 10 * time.Second

// withdrawTimeout bounds the call that withdraws a request nobody answered.
const withdrawTimeout = 5 * time.Second

// Backend is how the tools reach the gateway. *client.Client implements
// it over HTTP; the gateway's /mcp endpoint implements it in process.
type Backend interface {
	Request(ctx context.Context, r client.Req, wait time.Duration) (client.Request, error)
	Get(ctx context.Context, id string, wait time.Duration) (client.Request, error)
	Cancel(ctx context.Context, id string) (client.Request, error)
	Check(ctx context.Context, r client.Req) (client.CheckResult, error)
	Hook(ctx context.Context, agent string, event []byte, wait time.Duration) ([]byte, error)
}

// Options configure New.
type Options struct {
	// Backend returns the backend one tool call asks through (over HTTP,
	// the one of the agent whose token the call carries).
	Backend func(ctx context.Context, req *mcp.CallToolRequest) (Backend, error)
	// Cwd is the working directory approval_prompt resolves relative
	// paths against (stdio: the directory Claude Code started the server
	// in); "" leaves them relative.
	Cwd string
	// Local says the server runs on the agent's machine (stdio): then
	// approval_prompt resolves the call's paths here and sends them with
	// Home, the agent's home, as `gateway hook` does (hooks.Localize).
	// Over HTTP the server's file system is not the agent's: false.
	Local bool
	Home  string
	// Version is reported in the MCP handshake.
	Version string
}

// New returns the MCP server with the gateway's tools.
func New(o Options) *mcp.Server {
	if o.Version == "" {
		o.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Approval gateway", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Ask the approval gateway before acting: request_approval waits for a person's answer " +
			"(or policy's), check says what policy allows now. approval_prompt is Claude Code's permission prompt tool.",
	})
	t := &tools{o: o}
	mcp.AddTool(s, &mcp.Tool{
		Name:  "approval_prompt",
		Title: "Approval gateway permission prompt",
		Description: "Claude Code's permission prompt tool (--permission-prompt-tool mcp__gateway__approval_prompt): " +
			"asks the approval gateway about a tool call and waits for its answer. Returns Claude Code's JSON: " +
			`{"behavior":"allow","updatedInput":{…}} or {"behavior":"deny","message":"…"}.`,
		InputSchema: promptSchema,
	}, t.approvalPrompt)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "request_approval",
		Title: "Ask the approval gateway and wait",
		Description: "Ask before an action (write a file, run a command, send mail…). Policy answers at once when it can; " +
			"otherwise a person is asked and the call waits for them, up to timeout. Returns the finished request: " +
			"status allowed means go ahead; denied, expired or cancelled mean do not, and reason/note say why.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.requestApproval)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "check",
		Title: "What policy says now",
		Description: "What the approval gateway's policy would say about an action now (allowed, denied or approval_required), " +
			"without asking anyone or storing anything.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, t.check)
	return s
}

func ptr[T any](v T) *T { return &v }

type tools struct{ o Options }

// promptSchema is approval_prompt's input: Claude Code's fields, and any
// others it adds over time (so not additionalProperties: false).
var promptSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"tool_name":   {Type: "string", Description: "the tool Claude wants to use (Bash, Write, mcp__server__tool …)"},
		"input":       {Type: "object", Description: "the tool's input"},
		"tool_use_id": {Type: "string", Description: "the tool call's id; asking again with it finds the same request"},
	},
	Required: []string{"tool_name", "input"},
}

// PromptInput is what Claude Code passes to its permission prompt tool.
type PromptInput struct {
	ToolName  string         `json:"tool_name"`
	Input     map[string]any `json:"input"`
	ToolUseID string         `json:"tool_use_id,omitempty"`
}

// PromptAnswer is the JSON text Claude Code reads back from its
// permission prompt tool.
type PromptAnswer struct {
	Behavior     string         `json:"behavior"` // allow | deny
	UpdatedInput map[string]any `json:"updatedInput,omitempty"`
	Message      string         `json:"message,omitempty"`
}

// approvalPrompt asks about one Claude Code tool call the way the hook
// does: the event goes to the gateway's hook endpoint, which maps it with
// the server's [hooks.claude_code] and waits by its wait. Only allow runs
// the tool, with its input unchanged; anything else (denied, no answer,
// the gateway unreachable, a tool with no mapping) is a deny whose message
// says why, since in `claude -p` nobody is at a terminal to ask instead.
func (t *tools) approvalPrompt(ctx context.Context, req *mcp.CallToolRequest, in PromptInput) (*mcp.CallToolResult, any, error) {
	ans := t.prompt(ctx, req, in)
	b, err := json.Marshal(ans)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}

func (t *tools) prompt(ctx context.Context, req *mcp.CallToolRequest, in PromptInput) PromptAnswer {
	if in.Input == nil {
		in.Input = map[string]any{}
	}
	ev, err := json.Marshal(hooks.Event{
		HookEventName: hooks.EventName, ToolName: in.ToolName, ToolInput: in.Input, ToolUseID: in.ToolUseID,
		Cwd: t.o.Cwd, PermissionMode: "default",
	})
	if err != nil {
		return refuse(hooks.Failed(err))
	}
	if t.o.Local {
		if e, err := hooks.ClaudeCode.Decode(ev); err == nil {
			ev = hooks.Localize(hooks.ClaudeCode, e, ev, t.o.Home)
		}
	}
	b, err := t.o.Backend(ctx, req)
	if err != nil {
		return refuse(hooks.Failed(err))
	}
	raw, err := b.Hook(ctx, "claude-code", ev, 0)
	if err != nil {
		return refuse(hooks.Failed(err))
	}
	var out hooks.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		return refuse(hooks.Failed(fmt.Errorf("the gateway's answer is not a hook decision: %w", err)))
	}
	if out.Decision() == hooks.Allow {
		return PromptAnswer{Behavior: "allow", UpdatedInput: in.Input}
	}
	return refuse(out)
}

// refuse is the deny answer for any hook output but allow. An "ask" (no
// answer in time, the gateway not consulted) is a refusal here: Claude
// Code asked this tool precisely because nobody is at a terminal.
func refuse(out hooks.Output) PromptAnswer {
	msg := out.Reason()
	if out.Decision() != hooks.Deny {
		msg = strings.TrimSuffix(msg, "; asking here instead") +
			". Not allowed: the approval gateway gave no approval, so the call is refused."
	}
	return PromptAnswer{Behavior: "deny", Message: msg}
}

// Action is the input of request_approval and check: what the agent wants
// to do.
type Action struct {
	Capability  string         `json:"capability" jsonschema:"what kind of action: fs:read, fs:write, code:exec, network:http, mail:send … (GET /v1/policy/registry lists them)"`
	Target      string         `json:"target,omitempty" jsonschema:"what it acts on: a path, a host, a command, a recipient (not needed for capabilities without a target, such as llm:local)"`
	Intent      string         `json:"intent,omitempty" jsonschema:"why, in a few words, for the person who decides"`
	GrantTarget string         `json:"grant_target,omitempty" jsonschema:"what Allow always should grant, when narrower than the default (e.g. /srv/app/*.yml)"`
	Summary     string         `json:"summary,omitempty" jsonschema:"one line of context shown on the card"`
	Executor    string         `json:"executor,omitempty" jsonschema:"the program or tool that will act"`
	Args        map[string]any `json:"args,omitempty" jsonschema:"the action's arguments, inspected by the guard (only their keys are stored)"`
	CallID      string         `json:"call_id,omitempty" jsonschema:"your id for this call: asking again with it returns the same request"`
}

// RequestInput is request_approval's input.
type RequestInput struct {
	Action
	Timeout string `json:"timeout,omitempty" jsonschema:"how long a person has to answer, e.g. 10m (default: the gateway's approvals.timeout); the call waits that long at most"`
}

func (a Action) req() client.Req {
	return client.Req{CallID: a.CallID, Capability: a.Capability, Target: a.Target, Intent: a.Intent,
		GrantTarget: a.GrantTarget, Summary: a.Summary, Executor: a.Executor, Args: a.Args}
}

// requestApproval posts the request and waits until it is finished. No
// answer within the timeout (or the call cancelled) withdraws it, so the
// result is always final: allowed, denied, expired or cancelled.
func (t *tools) requestApproval(ctx context.Context, req *mcp.CallToolRequest, in RequestInput) (*mcp.CallToolResult, any, error) {
	r := in.req()
	wait := DefaultWait
	if in.Timeout != "" {
		d, err := duration.Parse(in.Timeout)
		if err != nil || d < MinWait || d > MaxWait {
			return nil, nil, fmt.Errorf("timeout: %q is not a duration between 10s and 24h (e.g. 10m)", in.Timeout)
		}
		r.Timeout, wait = d, d+2*time.Second // let the gateway expire it first
	}
	b, err := t.o.Backend(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	got, err := Await(ctx, b, r, wait)
	if err != nil {
		return nil, nil, err
	}
	return nil, raw(got), nil
}

// Asker is the part of a Backend Await uses.
type Asker interface {
	Request(ctx context.Context, r client.Req, wait time.Duration) (client.Request, error)
	Get(ctx context.Context, id string, wait time.Duration) (client.Request, error)
	Cancel(ctx context.Context, id string) (client.Request, error)
}

// Await posts r and waits up to wait until it is finished. No answer in
// time (or ctx ending) withdraws it, so a request returned without error
// is always final: allowed, denied, expired or cancelled. Errors are what
// the agent may read (explain).
func Await(ctx context.Context, b Asker, r client.Req, wait time.Duration) (client.Request, error) {
	// Post without waiting, then wait: once the request exists its id is
	// known, so a call cancelled while it waits can withdraw it.
	got, err := b.Request(ctx, r, 0)
	if err != nil {
		return client.Request{}, explain(err)
	}
	if !got.Finished() {
		var next client.Request
		if next, err = b.Get(ctx, got.ID, wait); next.ID != "" {
			got = next
		}
	}
	if err == nil && got.Finished() {
		return got, nil
	}
	// Nobody answered in time, or the call was cancelled: withdraw it so
	// its cards stop asking.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	done, cerr := b.Cancel(cctx, got.ID)
	var ae *client.APIError
	switch {
	case errors.As(cerr, &ae) && ae.Request != nil:
		return *ae.Request, nil // decided in the last instant
	case cerr != nil:
		return client.Request{}, fmt.Errorf("request %s got no answer and could not be withdrawn: %w", got.ID, explain(cerr))
	case err != nil:
		return client.Request{}, fmt.Errorf("waiting for request %s (now withdrawn): %w", got.ID, explain(err))
	}
	return done, nil
}

func (t *tools) check(ctx context.Context, req *mcp.CallToolRequest, in Action) (*mcp.CallToolResult, any, error) {
	b, err := t.o.Backend(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	res, err := b.Check(ctx, in.req())
	if err != nil {
		return nil, nil, explain(err)
	}
	return nil, res, nil
}

// raw is the request object exactly as the gateway sent it.
func raw(r client.Request) any {
	if len(r.Raw) > 0 {
		return r.Raw
	}
	return r
}

// explain turns a client error into what the agent reads: the gateway's
// message and code, never a token (client errors hold none).
func explain(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) {
		if ae.RetryAfter > 0 {
			return fmt.Errorf("%s (%s); retry in %s", ae.Message, ae.Code, ae.RetryAfter)
		}
		return fmt.Errorf("%s (%s)", ae.Message, ae.Code)
	}
	return err
}
