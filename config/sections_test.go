package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// echo is a section another package would own: [echo], with a secret
// named by token_env.
type echo struct {
	TokenEnv string   `toml:"token_env"`
	Token    string   `toml:"-"`
	Room     string   `toml:"room"`
	Peers    []string `toml:"peers"`
	Wait     Duration `toml:"wait"`
}

func (e *echo) Resolve() {
	if e.Room == "" {
		e.Room = "lobby" // "" means the default
	}
}

func (e *echo) Validate(p Problems, c *Config) {
	p.Secret("token_env", e.TokenEnv, e.Token, false)
	if e.Room == "nowhere" {
		p.Add("room", "%q is no room", e.Room)
	}
	if len(c.Agents) > 0 && len(e.Peers) == 0 {
		p.Add("peers", "required when there are agents")
	}
}

var echoSpec = SectionSpec{Name: "echo", New: func() Section { return &echo{Room: "lobby", Wait: 42} }}

func loadEcho(t *testing.T, body string, kv map[string]string) (Config, error) {
	t.Helper()
	return LoadWith(writeFile(t, body), true, env(kv), LoadOptions{Sections: []SectionSpec{echoSpec}})
}

func TestSections_DecodedOverDefaultsResolvedAndRedacted(t *testing.T) {
	cfg, err := loadEcho(t, "[echo]\ntoken_env = \"ECHO_TOKEN\"\npeers = [\"a\"]\n", map[string]string{"ECHO_TOKEN": "echo-SECRET-1", "HOME": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := cfg.Section("echo").(*echo)
	if !ok {
		t.Fatalf("Section(echo) = %#v", cfg.Section("echo"))
	}
	want := echo{TokenEnv: "ECHO_TOKEN", Token: "echo-SECRET-1", Room: "lobby", Peers: []string{"a"}, Wait: 42}
	if !reflect.DeepEqual(*e, want) {
		t.Errorf("echo = %+v, want %+v", *e, want)
	}
	if !slices.Contains(cfg.Secrets(), "echo-SECRET-1") {
		t.Errorf("Secrets() leaves out the section's: %q", cfg.Secrets())
	}
	r := cfg.Redacted().Section("echo").(*echo)
	if r.Token != redacted || e.Token != "echo-SECRET-1" || &r.Peers[0] == &e.Peers[0] {
		t.Errorf("Redacted: %+v, original %+v", r, e)
	}
	if names := cfg.SectionNames(); !slices.Equal(names, []string{"echo"}) {
		t.Errorf("SectionNames = %q", names)
	}
	if cfg.Section("nope") != nil {
		t.Error("an unregistered section is not nil")
	}
}

func TestSections_ProblemsNameTheirKeys(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown key with a suggestion", "[echo]\nrom = \"x\"\n", "echo.rom: unknown key (did you mean room?)"},
		{"a secret in the file", "[echo]\ntoken = \"x\"\n", "echo.token: unknown key (secrets are never read from the file"},
		{"the section's own check", "[echo]\nroom = \"nowhere\"\n", `echo.room: "nowhere" is no room`},
		{"a check across tables", "[[agents]]\nid = \"a\"\ntoken_env = \"T\"\n", "echo.peers: required when there are agents"},
		{"an unset secret", "[echo]\ntoken_env = \"ECHO_TOKEN\"\n", "echo.token_env: ECHO_TOKEN is empty"},
		{"a bad duration", "[echo]\nwait = \"soon\"\n", `echo.wait: bad duration "soon"`},
		{"a type error", "[echo]\nroom = 3\n", "echo.room: line 2: incompatible types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadEcho(t, tc.body, map[string]string{"T": strings.Repeat("t", 30), "HOME": t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSections_UnregisteredIsUnknown(t *testing.T) {
	_, err := Load(writeFile(t, "[echo]\nroom = \"x\"\n"), true, env(nil))
	if err == nil || !strings.Contains(err.Error(), "echo: unknown key") {
		t.Errorf("err = %v, want echo: unknown key", err)
	}
}

func TestSections_SkipSecretsReadsNone(t *testing.T) {
	cfg, err := LoadWith(writeFile(t, "[echo]\ntoken_env = \"ECHO_TOKEN\"\n"), true, env(map[string]string{"ECHO_TOKEN": "s", "HOME": t.TempDir()}),
		LoadOptions{Sections: []SectionSpec{echoSpec}, SkipSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if tok := cfg.Section("echo").(*echo).Token; tok != "" {
		t.Errorf("token read with SkipSecrets: %q", tok)
	}
}

func TestSections_BadRegistrations(t *testing.T) {
	mk := func() Section { return &echo{} }
	for _, specs := range [][]SectionSpec{
		{{Name: "server", New: mk}},
		{{Name: "echo", New: mk}, {Name: "echo", New: mk}},
		{{Name: "Echo!", New: mk}},
		{{Name: "echo"}},
		{{Name: "bare", New: func() Section { return &bareSecret{} }}},
		{{Name: "plain", New: func() Section { return plainSection{} }}},
	} {
		var c Config
		if err := c.AddSections(specs...); err == nil {
			t.Errorf("AddSections(%v) accepted", specs[len(specs)-1].Name)
		}
	}
}

// bareSecret holds a secret with no *_env key to read it from: config
// could neither read nor be sure to hide it, so it is refused.
type bareSecret struct {
	Key string `toml:"-"`
}

func (*bareSecret) Resolve()                   {}
func (*bareSecret) Validate(Problems, *Config) {}

// plainSection is no pointer: the file could not be decoded over it.
type plainSection struct{}

func (plainSection) Resolve()                   {}
func (plainSection) Validate(Problems, *Config) {}

// Every bad duration is reported at once, with its index, and the other
// problems beside them.
func TestLoad_BadValuesReportedTogether(t *testing.T) {
	body := "[policy]\ngrant_ttl = \"10x\"\n[approvals]\nallow_for = [\"1h\", \"later\"]\nprune_schedule = \"nope\"\n" +
		"[[agents]]\nid = \"a\"\ntoken_env = \"T\"\n[[agents]]\nid = \"b\"\ntoken_env = \"T\"\nautonomy = \"God\"\n"
	_, err := Load(writeFile(t, body), true, env(map[string]string{"T": strings.Repeat("t", 30), "HOME": t.TempDir()}))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`policy.grant_ttl: bad duration "10x"`, `approvals.allow_for[1]: bad duration "later"`,
		`agents[1].autonomy: unknown autonomy level "God"`, "approvals.prune_schedule: bad cron spec"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err does not say %q:\n%v", want, err)
		}
	}
}

// A bad duration beside a type error: both are reported, the type error
// by its key.
func TestLoad_BadValueAndTypeError(t *testing.T) {
	_, err := Load(writeFile(t, "[policy]\ngrant_ttl = \"10x\"\n[server]\nlisten = 12\n"), true, env(nil))
	if err == nil || !strings.Contains(err.Error(), `policy.grant_ttl: bad duration "10x"`) ||
		!strings.Contains(err.Error(), "server.listen: incompatible types") {
		t.Errorf("err = %v", err)
	}
}
