package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Callback builds the callback_query update of a user tapping an inline
// button with data on a message (a stored one, or one the fake does not
// know, for forged callbacks), without delivering it: a test can then
// deliver it twice. It has its update id and a fresh query id.
func (s *Server) Callback(from tgbotapi.User, chatID int64, messageID int, data string) tgbotapi.Update {
	u := s.callback(from, chatID, messageID, data)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdate++
	u.UpdateID = s.nextUpdate
	return u
}

// callback is Callback without an update id (Enqueue gives it one).
func (s *Server) callback(from tgbotapi.User, chatID int64, messageID int, data string) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextQuery++
	qid := fmt.Sprintf("q%d", s.nextQuery)
	s.queries[qid] = false
	msg := &tgbotapi.Message{MessageID: messageID, Chat: &tgbotapi.Chat{ID: chatID, Type: chatType(chatID)},
		From: &s.Bot, Date: int(time.Now().Unix())}
	if m, ok := s.messages[msgKey{chatID, messageID}]; ok {
		msg.Text, msg.ReplyMarkup = m.Text, m.Keyboard
	}
	return tgbotapi.Update{CallbackQuery: &tgbotapi.CallbackQuery{
		ID: qid, From: &from, Message: msg, ChatInstance: strconv.FormatInt(chatID, 10), Data: data,
	}}
}

// Press simulates a user tapping an inline button: it delivers the
// callback update and returns the query id. The update id is given as the
// update is queued, in one step, as Telegram does: two taps at the same
// moment are queued in the order of their ids, so a getUpdates offset that
// confirms the later one never drops the earlier one unseen.
func (s *Server) Press(from tgbotapi.User, chatID int64, messageID int, data string) string {
	u := s.callback(from, chatID, messageID, data)
	s.Enqueue(u)
	return u.CallbackQuery.ID
}

// PressButton taps the button of a stored message whose label contains
// label, and returns the query id; it fails the test when there is none.
func (s *Server) PressButton(tb testing.TB, from tgbotapi.User, chatID int64, messageID int, label string) string {
	tb.Helper()
	m, ok := s.Message(chatID, messageID)
	if !ok {
		tb.Fatalf("telegramtest: no message %d in chat %d", messageID, chatID)
	}
	for _, b := range m.Buttons() {
		if strings.Contains(b.Text, label) && b.CallbackData != nil {
			return s.Press(from, chatID, messageID, *b.CallbackData)
		}
	}
	tb.Fatalf("telegramtest: message %d has no button %q (buttons: %v)", messageID, label, m.Buttons())
	return ""
}

// Say simulates a user writing text in a chat, as a reply to replyTo when
// it is not 0. A leading /command gets its bot_command entity, as Telegram
// adds it. It returns the new message's id.
func (s *Server) Say(from tgbotapi.User, chatID int64, text string, replyTo int) int {
	s.mu.Lock()
	s.nextMsg[chatID]++
	id := s.nextMsg[chatID]
	s.messages[msgKey{chatID, id}] = &Message{ChatID: chatID, ID: id, From: &from, Text: text, ReplyTo: replyTo}
	msg := &tgbotapi.Message{MessageID: id, From: &from, Chat: &tgbotapi.Chat{ID: chatID, Type: chatType(chatID)},
		Date: int(time.Now().Unix()), Text: text}
	if strings.HasPrefix(text, "/") {
		n, _, _ := strings.Cut(text, " ")
		msg.Entities = []tgbotapi.MessageEntity{{Type: "bot_command", Offset: 0, Length: utf16Len(n)}}
	}
	if replyTo != 0 {
		if m, ok := s.messages[msgKey{chatID, replyTo}]; ok {
			msg.ReplyToMessage = &tgbotapi.Message{MessageID: m.ID, Chat: msg.Chat, Text: m.Text, From: m.From,
				ReplyMarkup: m.Keyboard}
			if m.From == nil {
				msg.ReplyToMessage.From = &s.Bot
			}
		} else {
			msg.ReplyToMessage = &tgbotapi.Message{MessageID: replyTo, Chat: msg.Chat}
		}
	}
	s.changedLocked()
	s.mu.Unlock()
	s.Enqueue(tgbotapi.Update{Message: msg})
	return id
}

func chatType(id int64) string {
	if id < 0 {
		return "supergroup"
	}
	return "private"
}

// Enqueue delivers an update: to the webhook when one is set (POSTed now,
// with the secret), else to the getUpdates queue. An update with
// UpdateID 0 gets the next id; a non-zero id is kept, so a test can
// deliver the same update twice. It returns the update id.
func (s *Server) Enqueue(u tgbotapi.Update) int {
	s.mu.Lock()
	if u.UpdateID == 0 {
		s.nextUpdate++
		u.UpdateID = s.nextUpdate
	}
	hook, secret := s.webhook, s.secret
	if hook == "" {
		s.updates = append(s.updates, u)
		s.changedLocked()
	}
	s.mu.Unlock()
	if hook != "" {
		status := s.deliver(hook, secret, u)
		s.mu.Lock()
		s.deliveries = append(s.deliveries, status)
		s.changedLocked()
		s.mu.Unlock()
	}
	return u.UpdateID
}

// deliver POSTs one update to the webhook like Telegram: JSON body, the
// secret in X-Telegram-Bot-Api-Secret-Token. It returns the HTTP status
// (0 when the webhook could not be reached).
func (s *Server) deliver(hook, secret string, u tgbotapi.Update) int {
	body, _ := json.Marshal(u)
	req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
