package shell

import (
	"errors"
	"slices"
	"testing"
)

func TestSingle(t *testing.T) {
	tests := []struct {
		name, src string
		allow     Allow
		want      []string // nil: not single
		dir, body string
	}{
		{"plain", "git status --short", 0, []string{"git", "status", "--short"}, "", ""},
		{"quoted", `git 'status' "--short"`, 0, []string{"git", "status", "--short"}, "", ""},
		{"ansi-c", `git $'st\x61tus'`, 0, []string{"git", "status"}, "", ""},
		{"list", "git status; rm -rf /", 0, nil, "", ""},
		{"and", "git status && curl x", 0, nil, "", ""},
		{"pipe", "git status | sh", 0, nil, "", ""},
		{"background", "git status &", 0, nil, "", ""},
		{"newline", "git status\nid", 0, nil, "", ""},
		{"subst", "git status $(id)", 0, nil, "", ""},
		{"backquote", "git status `id`", 0, nil, "", ""},
		{"param", "git status $X", 0, nil, "", ""},
		{"glob", "git status *", 0, nil, "", ""},
		{"brace", "git status{,;id}", 0, nil, "", ""},
		{"redirect", "git status > /etc/x", 0, nil, "", ""},
		{"assignment", "GIT_DIR=/x git status", 0, nil, "", ""},
		{"tilde", "git status ~", 0, nil, "", ""},
		{"subshell", "(git status)", 0, nil, "", ""},
		{"negated", "! git status", 0, nil, "", ""},
		{"parse error", "git status '", 0, nil, "", ""},
		{"heredoc not allowed", "apply_patch <<'EOF'\nx\nEOF", 0, nil, "", ""},
		{"heredoc", "apply_patch <<'EOF'\nx\nEOF", AllowHeredoc, []string{"apply_patch"}, "", "x\n"},
		{"heredoc then more", "apply_patch <<'EOF'\nx\nEOF\nid\nEOF", AllowHeredoc, nil, "", ""},
		{"heredoc expanding", "apply_patch <<EOF\n$(id)\nEOF", AllowHeredoc, nil, "", ""},
		{"heredoc plain unquoted", "apply_patch <<EOF\nx\nEOF", AllowHeredoc, []string{"apply_patch"}, "", "x\n"},
		{"two heredocs", "apply_patch <<'EOF' <<'EOG'\nx\nEOF\ny\nEOG", AllowHeredoc, nil, "", ""},
		{"dash heredoc", "apply_patch <<-'EOF'\n\tx\n\tEOF", AllowHeredoc, nil, "", ""},
		{"cd", "cd /w && apply_patch <<'EOF'\nx\nEOF", AllowCd | AllowHeredoc, []string{"apply_patch"}, "/w", "x\n"},
		{"cd not allowed", "cd /w && git status", 0, nil, "", ""},
		{"cd then two", "cd /w && git status && id", AllowCd, nil, "", ""},
		{"cd or", "cd /w || git status", AllowCd, nil, "", ""},
		{"cd subst", "cd $(id) && git status", AllowCd, nil, "", ""},
		{"nul", "git status\x00; id", 0, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := Single(tt.src, tt.allow)
			if ok != (tt.want != nil) {
				t.Fatalf("Single(%q) ok = %v, want %v", tt.src, ok, tt.want != nil)
			}
			if !ok {
				return
			}
			if !slices.Equal(c.Args, tt.want) || c.Dir != tt.dir || c.Heredoc != tt.body {
				t.Fatalf("Single(%q) = %+v, want %q dir %q body %q", tt.src, c, tt.want, tt.dir, tt.body)
			}
		})
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // texts that must be listed
	}{
		{"quotes removed", `cat "/etc/"sha'dow'`, []string{"cat", "/etc/shadow"}},
		{"ansi-c", `cat $'/etc/sha\x64ow'`, []string{"/etc/shadow"}},
		{"brace", "cat /etc/{pass,sha}dow", []string{"/etc/passdow", "/etc/shadow"}},
		{"redirect", "echo x > ~/.bashrc", []string{"~/.bashrc"}},
		{"heredoc target", "cat > /etc/cron.d/x <<'EOF'\n* * * * * id\nEOF", []string{"/etc/cron.d/x", "* * * * * id\n"}},
		{"substitution", "echo $(cat /etc/shadow)", []string{"cat", "/etc/shadow"}},
		{"run-time part", "cat /etc/sh$(echo a)dow", []string{`/etc/sh*dow`}},
		{"bash -c", "bash -c 'cat /etc/shadow'", []string{"cat /etc/shadow", "cat", "/etc/shadow"}},
		{"sudo sh -c", `sudo sh -c "cat '/root/.ssh/id_rsa'"`, []string{"/root/.ssh/id_rsa"}},
		{"eval", `eval cat '/etc/sh''adow'`, []string{"/etc/shadow"}},
		{"shell heredoc", "bash <<'EOF'\ncat /etc/shadow\nEOF", []string{"/etc/shadow"}},
		{"assignment", "F=/etc/shadow; cat $F", []string{"/etc/shadow"}},
		{"default", "cat ${F:-/etc/shadow}", []string{"/etc/shadow"}},
		{"test", "[[ -r /etc/shadow ]]", []string{"/etc/shadow"}},
		{"for", "for f in /etc/shadow; do cat $f; done", []string{"/etc/shadow"}},
		{"glob", "cat /home/u/.ss*/id_*", []string{"/home/u/.ss*/id_*"}},
		{"quoted glob", `cat "/x/*"$y`, []string{`/x/\**`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := Words(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !slices.ContainsFunc(ws, func(w Word) bool { return w.Text == want }) {
					t.Errorf("Words(%q) lacks %q: %+v", tt.src, want, ws)
				}
			}
		})
	}
	if _, err := Words("cat '/etc/shadow"); !errors.Is(err, ErrParse) {
		t.Errorf("an unclosed quote: err = %v, want ErrParse", err)
	}
	if _, err := Words("bash -c 'cat \"/x'"); !errors.Is(err, ErrParse) {
		t.Errorf("a -c string that does not parse: err = %v, want ErrParse", err)
	}
}
