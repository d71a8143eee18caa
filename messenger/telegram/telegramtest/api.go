package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// apiError is an error answer of the Bot API.
type apiError struct {
	status     int
	desc       string
	retryAfter int
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
}

// call performs one API method on the fake's state.
func (s *Server) call(ctx context.Context, method string, p url.Values) (any, *apiError) {
	switch method {
	case "getMe":
		return s.Bot, nil
	case "getUpdates":
		return s.getUpdates(ctx, p)
	case "sendMessage":
		return s.sendMessage(p)
	case "editMessageText":
		return s.editMessageText(p)
	case "editMessageReplyMarkup":
		return s.editMessageReplyMarkup(p)
	case "answerCallbackQuery":
		return s.answerCallbackQuery(p)
	case "setMyCommands":
		var cmds []tgbotapi.BotCommand
		if err := json.Unmarshal([]byte(p.Get("commands")), &cmds); err != nil {
			return nil, badRequest("can't parse commands JSON object")
		}
		s.mu.Lock()
		s.commands = cmds
		s.mu.Unlock()
		return true, nil
	case "setWebhook":
		s.mu.Lock()
		s.webhook, s.secret = p.Get("url"), p.Get("secret_token")
		s.mu.Unlock()
		return true, nil
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		s.mu.Unlock()
		return true, nil
	case "getWebhookInfo":
		s.mu.Lock()
		defer s.mu.Unlock()
		return map[string]any{"url": s.webhook, "pending_update_count": len(s.updates)}, nil
	}
	return nil, &apiError{status: http.StatusNotFound, desc: "Not Found"}
}

func (s *Server) getUpdates(ctx context.Context, p url.Values) (any, *apiError) {
	offset, _ := strconv.Atoi(p.Get("offset"))
	limit, _ := strconv.Atoi(p.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p.Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	held := false
	defer func() {
		if held {
			s.mu.Lock()
			s.held--
			s.changedLocked()
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if s.webhook != "" {
			s.mu.Unlock()
			return nil, &apiError{status: http.StatusConflict,
				desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
		}
		if offset != 0 { // confirms every update before offset
			s.updates = slices.DeleteFunc(s.updates, func(u tgbotapi.Update) bool { return u.UpdateID < offset })
		}
		if len(s.updates) > 0 {
			out := slices.Clone(s.updates[:min(limit, len(s.updates))])
			s.mu.Unlock()
			return out, nil
		}
		if !held {
			held = true
			s.held++
			s.changedLocked()
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return []tgbotapi.Update{}, nil
		case <-ctx.Done():
			return []tgbotapi.Update{}, nil
		case <-s.done:
			return []tgbotapi.Update{}, nil
		}
	}
}

func (s *Server) sendMessage(p url.Values) (any, *apiError) {
	chat, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || chat == 0 {
		return nil, badRequest("chat not found")
	}
	htmlText, text, kb, aerr := content(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextMsg[chat]++
	m := &Message{ChatID: chat, ID: s.nextMsg[chat], HTML: htmlText, Text: text, Keyboard: kb}
	m.ReplyTo, _ = strconv.Atoi(p.Get("reply_to_message_id"))
	s.messages[msgKey{chat, m.ID}] = m
	return s.wire(m), nil
}

func (s *Server) target(p url.Values) (*Message, *apiError) {
	chat, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	id, _ := strconv.Atoi(p.Get("message_id"))
	m, ok := s.messages[msgKey{chat, id}]
	if !ok {
		return nil, badRequest("message to edit not found")
	}
	if m.From != nil {
		return nil, badRequest("message can't be edited")
	}
	return m, nil
}

func (s *Server) editMessageText(p url.Values) (any, *apiError) {
	htmlText, text, kb, aerr := content(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.target(p)
	if aerr != nil {
		return nil, aerr
	}
	if m.Text == text && m.HTML == htmlText && sameKeyboard(m.Keyboard, kb) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.HTML, m.Text, m.Keyboard = htmlText, text, kb
	m.Edits++
	return s.wire(m), nil
}

func (s *Server) editMessageReplyMarkup(p url.Values) (any, *apiError) {
	kb, aerr := keyboard(p.Get("reply_markup"))
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.target(p)
	if aerr != nil {
		return nil, aerr
	}
	if sameKeyboard(m.Keyboard, kb) {
		return nil, badRequest("message is not modified")
	}
	m.Keyboard = kb
	m.Edits++
	return s.wire(m), nil
}

func (s *Server) answerCallbackQuery(p url.Values) (any, *apiError) {
	qid := p.Get("callback_query_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	answered, issued := s.queries[qid]
	if !issued || answered {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if len(p.Get("text")) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	s.queries[qid] = true
	s.answers = append(s.answers, Answer{QueryID: qid, Text: p.Get("text"), ShowAlert: p.Get("show_alert") == "true"})
	return true, nil
}

// wire is a stored message as the API returns it; s.mu held.
func (s *Server) wire(m *Message) tgbotapi.Message {
	return tgbotapi.Message{MessageID: m.ID, From: &s.Bot, Chat: &tgbotapi.Chat{ID: m.ChatID, Type: chatType(m.ChatID)},
		Date: int(time.Now().Unix()), Text: m.Text, ReplyMarkup: m.Keyboard}
}

// content validates the text, parse mode and keyboard of a send or edit.
func content(p url.Values) (htmlText, text string, kb *tgbotapi.InlineKeyboardMarkup, aerr *apiError) {
	raw := p.Get("text")
	switch mode := p.Get("parse_mode"); mode {
	case "HTML":
		v, err := VisibleText(raw)
		if err != nil {
			return "", "", nil, badRequest("can't parse entities: %v", err)
		}
		htmlText, text = raw, v
	case "":
		text = raw
	default:
		return "", "", nil, badRequest("unsupported parse_mode %q in this fake", mode)
	}
	if strings.TrimSpace(text) == "" {
		return "", "", nil, badRequest("message text is empty")
	}
	if utf16Len(text) > MaxText {
		return "", "", nil, badRequest("message is too long")
	}
	kb, aerr = keyboard(p.Get("reply_markup"))
	return htmlText, text, kb, aerr
}

func keyboard(raw string) (*tgbotapi.InlineKeyboardMarkup, *apiError) {
	if raw == "" {
		return nil, nil
	}
	var kb tgbotapi.InlineKeyboardMarkup
	if err := json.Unmarshal([]byte(raw), &kb); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.CallbackData != nil && (len(*b.CallbackData) == 0 || len(*b.CallbackData) > MaxCallbackData) {
				return nil, badRequest("BUTTON_DATA_INVALID")
			}
			if b.Text == "" {
				return nil, badRequest("text buttons are unallowed in the inline keyboard")
			}
		}
	}
	if len(kb.InlineKeyboard) == 0 {
		return nil, nil // an empty keyboard removes the buttons
	}
	return &kb, nil
}

func sameKeyboard(a, b *tgbotapi.InlineKeyboardMarkup) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// htmlTags are the tags Telegram's HTML parse mode accepts
// (https://core.telegram.org/bots/api#html-style).
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
	"del": true, "code": true, "pre": true, "a": true, "span": true, "tg-spoiler": true, "blockquote": true,
}

// VisibleText parses Telegram HTML strictly: known tags, balanced, and the
// entities Telegram knows (&lt; &gt; &amp; &quot; and numeric ones). It
// returns the text a person sees.
func VisibleText(s string) (string, error) {
	d := xml.NewDecoder(strings.NewReader("<telegram-root>" + s + "</telegram-root>"))
	d.Strict = true
	d.Entity = map[string]string{} // only the XML predefined ones; &apos; is refused below
	if strings.Contains(s, "&apos;") {
		return "", errors.New("unsupported entity &apos;")
	}
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if n := tok.Name.Local; n != "telegram-root" && !htmlTags[n] {
				return "", fmt.Errorf("unsupported start tag %q", n)
			}
		case xml.CharData:
			b.Write(tok)
		case xml.Comment, xml.ProcInst, xml.Directive:
			return "", errors.New("unsupported markup")
		}
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
