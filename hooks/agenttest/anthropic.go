package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// ToolCall is the one tool call a scripted model asks for.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Anthropic is a scripted stand-in for the Anthropic Messages API (what
// Claude Code calls at $ANTHROPIC_BASE_URL/v1/messages, streaming). In a
// conversation that offers the scripted tool it asks for exactly one call
// of it; once the conversation carries that call's tool_result it ends the
// turn with a text quoting the result ("TOOL RESULT: …", with
// "(error)" when the result is an error). Side requests (no such tool,
// e.g. a title) get a short text.
type Anthropic struct {
	*Model
	mu   sync.Mutex
	call ToolCall
	seq  atomic.Int64
}

// SetInput sets the scripted call's input (when it depends on paths the
// test makes after starting the stand-in).
func (a *Anthropic) SetInput(input map[string]any) {
	a.mu.Lock()
	a.call.Input = input
	a.mu.Unlock()
}

func (a *Anthropic) script() ToolCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.call
}

// FinalPrefix starts the final text of a scripted conversation.
const FinalPrefix = "TOOL RESULT: "

// NewAnthropic serves the stand-in on 127.0.0.1 until the test ends.
func NewAnthropic(t testing.TB, call ToolCall) *Anthropic {
	t.Helper()
	a := &Anthropic{call: call}
	a.Model = NewModel(t, a.serve)
	return a
}

// messagesRequest is the part of a Messages API request the stand-in reads.
type messagesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// block is a content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"input_tokens":100}`)
			return
		}
		http.NotFound(w, r)
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := a.script()
	offered := false
	for _, tool := range req.Tools {
		offered = offered || tool.Name == call.Name
	}
	id := fmt.Sprintf("msg_%d", a.seq.Add(1))
	switch result, ok := lastToolResult(req); {
	case ok:
		a.text(w, req, id, FinalPrefix+result)
	case offered:
		toolUse(w, req, id, call)
	default:
		a.text(w, req, id, "ok")
	}
}

// lastToolResult is the text of a tool_result in the last user message.
func lastToolResult(req messagesRequest) (string, bool) {
	if len(req.Messages) == 0 {
		return "", false
	}
	var blocks []block
	if json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &blocks) != nil {
		return "", false
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var s string
		if json.Unmarshal(b.Content, &s) != nil {
			var parts []block
			json.Unmarshal(b.Content, &parts)
			var texts []string
			for _, p := range parts {
				texts = append(texts, p.Text)
			}
			s = strings.Join(texts, "\n")
		}
		if b.IsError {
			s = "(error) " + s
		}
		return s, true
	}
	return "", false
}

func toolUse(w http.ResponseWriter, req messagesRequest, id string, call ToolCall) {
	input, _ := json.Marshal(call.Input)
	toolID := "toolu_" + strings.TrimPrefix(id, "msg_") + "_scripted"
	if !req.Stream {
		writeMessage(w, req, id, "tool_use", []any{map[string]any{"type": "tool_use", "id": toolID, "name": call.Name, "input": call.Input}})
		return
	}
	start(w, req, id)
	event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": call.Name, "input": map[string]any{}}})
	event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	stop(w, "tool_use")
}

func (a *Anthropic) text(w http.ResponseWriter, req messagesRequest, id, text string) {
	if !req.Stream {
		writeMessage(w, req, id, "end_turn", []any{map[string]any{"type": "text", "text": text}})
		return
	}
	start(w, req, id)
	event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text}})
	stop(w, "end_turn")
}

func writeMessage(w http.ResponseWriter, req messagesRequest, id, stopReason string, content []any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stopReason, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 10}})
}

func start(w http.ResponseWriter, req messagesRequest, id string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
}

func stop(w http.ResponseWriter, stopReason string) {
	event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	event(w, "message_stop", map[string]any{"type": "message_stop"})
}

func event(w http.ResponseWriter, name string, v any) {
	b, _ := json.Marshal(v)
	SSE(w, name, b)
}

// ClaudeEnv is the environment that points Claude Code at the stand-in,
// offline: no telemetry, no update check, no other traffic.
func (a *Anthropic) ClaudeEnv() []string {
	return []string{"ANTHROPIC_BASE_URL=" + a.URL, "ANTHROPIC_API_KEY=sk-ant-agenttest",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1"}
}
