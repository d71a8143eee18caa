package config

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

// The agent list exists once (hooks.Adapters): every adapter has its
// section, and no section names anything else.
func TestHooks_OneSectionPerAdapter(t *testing.T) {
	h := Default().Hooks
	for _, ad := range hooks.Adapters() {
		if h.Section(ad.Name) == nil {
			t.Errorf("adapter %s has no [%s]", ad.Name, ad.Section)
		}
		if ad.Section != "hooks."+hookTable(ad) || strings.ContainsAny(hookTable(ad), ".-") {
			t.Errorf("adapter %s: table %q", ad.Name, ad.Section)
		}
	}
	for name := range h {
		if _, ok := hooks.AdapterNamed(name); !ok {
			t.Errorf("[hooks] has a section for %q, no adapter", name)
		}
	}
	if len(h) != len(hooks.Adapters()) {
		t.Errorf("%d sections for %d adapters", len(h), len(hooks.Adapters()))
	}
}

func TestHooks_EverySectionReadsFromTheFile(t *testing.T) {
	var body strings.Builder
	for _, ad := range hooks.Adapters() {
		body.WriteString("[" + ad.Section + "]\nwait = \"3m\"\n[" + ad.Section + ".tools]\n\"x_" + hookTable(ad) + "\" = \"mail:send\"\n")
	}
	cfg, err := Load(writeFile(t, body.String()), true, env(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	for _, ad := range hooks.Adapters() {
		sec := cfg.Hooks.Section(ad.Name)
		if sec.Wait.String() != "3m0s" || sec.UnknownTool != "ask" || sec.Tools["x_"+hookTable(ad)] != "mail:send" {
			t.Errorf("%s: %+v", ad.Name, sec)
		}
	}
}

func TestHooks_UnknownOrMissingSection(t *testing.T) {
	_, err := Load(writeFile(t, "[hooks.claud_code]\nwait = \"1m\"\n"), true, env(map[string]string{"HOME": t.TempDir()}))
	if err == nil || !strings.Contains(err.Error(), "hooks.claud_code: unknown key (did you mean claude_code?)") ||
		strings.Contains(err.Error(), "hooks.claud_code.wait") {
		t.Errorf("unknown table: %v", err)
	}

	c := Default()
	delete(c.Hooks, "codex")
	c.Hooks["aider"] = defaultHookAgent()
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "hooks.codex: missing") || !strings.Contains(err.Error(), `hooks: a section for "aider"`) {
		t.Errorf("Validate: %v", err)
	}
}

func TestHooks_RedactedSharesNothing(t *testing.T) {
	c := Default()
	r := c.Redacted()
	r.Hooks["codex"].Tools["x"] = "mail:send"
	r.Hooks["codex"].Wait = 1
	if len(c.Hooks["codex"].Tools) != 0 || c.Hooks["codex"].Wait == 1 {
		t.Errorf("Redacted shares the hook sections: %+v", c.Hooks["codex"])
	}
}
