package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// chat is a messenger another package would own, as the gateway's are:
// [chat] (and [room], the same kind under another name), enabled by
// token_env, with approvers named "chat:<user>" and groups "chat:g-<name>".
type chat struct {
	TokenEnv  string   `toml:"token_env"`
	Token     string   `toml:"-"`
	Approvers []string `toml:"approvers"`
}

var chatUserRE = regexp.MustCompile(`^(g-)?[a-z0-9]{1,16}$`)

func (m *chat) Enabled() bool           { return m.TokenEnv != "" || m.Token != "" }
func (m *chat) EnableKey() string       { return "token_env" }
func (m *chat) ApproverExample() string { return "u1" }

func (m *chat) CheckApprover(user string) (bool, error) {
	group := strings.HasPrefix(user, "g-")
	if !chatUserRE.MatchString(user) {
		return group, fmt.Errorf("bad chat user %q", user)
	}
	return group, nil
}

func (m *chat) Resolve() {}

func (m *chat) Validate(p Problems, _ *Config) {
	if m.Enabled() {
		p.Secret("token_env", m.TokenEnv, m.Token, true)
		if len(m.Approvers) == 0 {
			p.Add("approvers", "required when enabled")
		}
	}
}

// chats registers [chat] and [room].
var chats = []SectionSpec{
	{Name: "chat", New: func() Section { return &chat{} }, Example: "[chat]\ntoken_env = \"CHAT_TOKEN\"\napprovers = [\"u1\"]\n"},
	{Name: "room", New: func() Section { return &chat{} }},
}

// load is Load with the stand-in messengers registered.
func load(path string, explicit bool, getenv func(string) string) (Config, error) {
	return LoadWith(path, explicit, getenv, LoadOptions{Sections: chats})
}

// chatOf is cfg's [chat].
func chatOf(cfg Config) *chat { return cfg.Section("chat").(*chat) }

// TestMessengers_AskedByName: the checks across tables ask the registered
// messengers, named in registration order.
func TestMessengers_AskedByName(t *testing.T) {
	cfg, err := load(writeFile(t, valid), true, env(baseEnv(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Messengers(); !slices.Equal(got, []string{"chat", "room"}) {
		t.Errorf("Messengers() = %v", got)
	}
	if !cfg.MessengerEnabled("chat") || cfg.MessengerEnabled("room") || cfg.MessengerEnabled("web") || cfg.Messenger("nope") != nil {
		t.Error("MessengerEnabled wrong")
	}
	if got := chatOf(cfg).Token; got != secrets["CHAT_TOKEN"] {
		t.Errorf("chat token %q", got)
	}
	if !slices.Contains(cfg.Secrets(), secrets["CHAT_TOKEN"]) {
		t.Error("Secrets misses the chat's token")
	}
	if got := chatOf(cfg.Redacted()).Token; got != "[redacted]" {
		t.Errorf("redacted chat token %q", got)
	}
	ex := ExampleWith(chats...)
	if !strings.Contains(ex, "[chat]\ntoken_env") || strings.Index(ex, "[chat]") > strings.Index(ex, "[hooks.") {
		t.Errorf("ExampleWith does not put [chat] before the hooks")
	}
	bare, err := Load(writeFile(t, "[chat]\ntoken_env = \"CHAT_TOKEN\"\n"), true, env(baseEnv(t)))
	if err == nil || !strings.Contains(err.Error(), "chat: unknown key") {
		t.Errorf("an unregistered messenger's table: %v, %+v", err, bare)
	}
}
