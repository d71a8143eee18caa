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

// Chat is a scripted stand-in for an OpenAI-compatible Chat Completions
// API (POST …/chat/completions, streaming or not), as GitHub Copilot CLI,
// Qwen Code and OpenCode call it with a bring-your-own-model endpoint. In
// a conversation that offers the scripted tool it asks for exactly one
// call of it; once the conversation carries a role "tool" message it ends
// the turn quoting that message ("TOOL RESULT: …"). Side requests (no
// tools, or not the scripted one: a title, a summary) get a short text.
type Chat struct {
	*Model
	mu   sync.Mutex
	call ToolCall
	seq  atomic.Int64
}

// NewChat serves the stand-in on 127.0.0.1 until the test ends.
func NewChat(t testing.TB, call ToolCall) *Chat {
	t.Helper()
	c := &Chat{call: call}
	c.Model = NewModel(t, c.serve)
	return c
}

// SetInput sets the scripted call's input.
func (c *Chat) SetInput(input map[string]any) {
	c.mu.Lock()
	c.call.Input = input
	c.mu.Unlock()
}

// Call is the scripted call.
func (c *Chat) Call() ToolCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.call
}

// chatRequest is the part of a Chat Completions request the stand-in reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (c *Chat) serve(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"test"}]}`)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := c.Call()
	id := fmt.Sprintf("chatcmpl-%d", c.seq.Add(1))
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == call.Name
	}
	result, done := lastToolMessage(req)
	switch {
	case !offered:
		c.reply(w, req, id, "ok", nil)
	case done:
		c.reply(w, req, id, FinalPrefix+result, nil)
	default:
		args, _ := json.Marshal(call.Input)
		c.reply(w, req, id, "", map[string]any{"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": string(args)}})
	}
}

// lastToolMessage is the text of the conversation's last role "tool"
// message, if any (content a string, or an array of text parts).
func lastToolMessage(req chatRequest) (string, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "tool" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s, true
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			return b.String(), true
		}
		return string(m.Content), true
	}
	return "", false
}

// reply answers text, or one tool call, streamed when the request asked.
func (c *Chat) reply(w http.ResponseWriter, req chatRequest, id, text string, call map[string]any) {
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": text}
	if call != nil {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}
	}
	usage := map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": usage})
		SSE(w, "", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if call != nil {
		chunk(map[string]any{"tool_calls": []any{call}}, nil, nil)
	} else {
		chunk(map[string]any{"content": text}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	SSE(w, "", []byte("[DONE]"))
}
