package policy

import "strings"

// The operands the table judges by their text: what an awk program, a
// sed script, tar's old-style letters, less's +commands, go run's module
// and git config's arguments make the program do. Each returns the risk
// and what took it ("" when none).

// awkProgram: an awk program runs commands (system, print | "cmd",
// "cmd" | getline, @load) and writes files (print > "file").
func awkProgram(_, operands []string, values map[string][]string) (Risk, string) {
	progs := values["-e"]
	if len(values["-f"]) == 0 && len(values["--file"]) == 0 && len(operands) > 0 {
		progs = append(progs, operands[0])
	}
	for _, prog := range progs {
		for _, w := range []string{"system", "|", "getline", "@load"} {
			if strings.Contains(prog, w) {
				return RiskRuns, "program with " + w
			}
		}
		if strings.Contains(prog, ">") {
			return RiskWrites, "program with >"
		}
	}
	return "", ""
}

// sedScript: a sed script's e command and s///e flag run commands, its
// w and W commands and s///w flag write files.
func sedScript(_, operands []string, values map[string][]string) (Risk, string) {
	scripts := append(append([]string(nil), values["-e"]...), values["--expression"]...)
	if len(scripts) == 0 && len(operands) > 0 {
		scripts = operands[:1]
	}
	for _, sc := range scripts {
		if r := sedRisk(sc); r != "" {
			return r, "script " + sedWhat(r)
		}
	}
	return "", ""
}

func sedWhat(r Risk) string {
	if r == RiskRuns {
		return "with e"
	}
	return "with w"
}

// sedRisk reads a sed script command by command (GNU sed's grammar:
// addresses, then one command letter and what it takes).
func sedRisk(s string) Risk {
	i := 0
	skipTo := func(stop string) {
		for i < len(s) && !strings.ContainsRune(stop, rune(s[i])) {
			if s[i] == '\\' {
				i++
			}
			i++
		}
	}
	delimited := func() bool { // past a delimited part, starting at its delimiter
		if i >= len(s) {
			return false
		}
		d := s[i]
		i++
		for i < len(s) && s[i] != d {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		i++
		return i <= len(s)
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!' || c == ',' ||
			c == '$' || c == '~' || c == '+' || (c >= '0' && c <= '9'):
			i++
		case c == '/':
			delimited()
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == '\\':
			i++
			delimited()
		case c == '#', c == 'a', c == 'i', c == 'c':
			skipTo("\n")
		case c == ':' || c == 'b' || c == 't' || c == 'T':
			i++
			skipTo(";\n}")
		case c == 'r' || c == 'R':
			i++
			skipTo("\n")
		case c == 'e':
			return RiskRuns
		case c == 'w' || c == 'W':
			return RiskWrites
		case c == 's':
			i++
			if !delimited() {
				return ""
			}
			i-- // the middle delimiter starts the replacement
			if !delimited() {
				return ""
			}
			for i < len(s) && !strings.ContainsRune(";\n}", rune(s[i])) {
				switch s[i] {
				case 'e':
					return RiskRuns
				case 'w':
					return RiskWrites
				}
				i++
			}
		case c == 'y':
			i++
			if !delimited() {
				return ""
			}
			i--
			delimited()
		default:
			i++
		}
	}
	return ""
}

// tarLetters: tar's old-style first argument (tar xzf a.tgz) bundles its
// options without a dash.
func tarLetters(args, _ []string, _ map[string][]string) (Risk, string) {
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		return "", ""
	}
	for _, c := range args[1] {
		switch c {
		case 'I', 'F':
			return RiskRuns, args[1]
		case 'x', 'c', 'r', 'u', 'A':
			return RiskWrites, args[1]
		}
	}
	return "", ""
}

// plusCommand: less and more run a +command at start (+!cmd in more,
// any less command in less).
func plusCommand(_, operands []string, _ map[string][]string) (Risk, string) {
	for _, w := range operands {
		if strings.HasPrefix(w, "+") {
			return RiskRuns, w
		}
	}
	return "", ""
}

// goRemoteRun: go run and go install of a module at a version fetch it
// and build it (go install puts it on the PATH).
func goRemoteRun(_, operands []string, _ map[string][]string) (Risk, string) {
	if len(operands) == 0 || operands[0] != "run" && operands[0] != "install" {
		return "", ""
	}
	for _, w := range operands[1:] {
		if strings.Contains(w, "@") {
			return RiskRuns, operands[0] + " " + w
		}
	}
	return "", ""
}

// gitConfigWrite: git config writes a config (core.pager, alias.x=!sh,
// core.fsmonitor) unless it only reads one.
func gitConfigWrite(args, operands []string, _ map[string][]string) (Risk, string) {
	if len(operands) == 0 || operands[0] != "config" {
		return "", ""
	}
	for _, w := range args {
		switch w {
		case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool":
			return "", ""
		}
	}
	if len(operands) > 1 && (operands[1] == "get" || operands[1] == "list") {
		return "", ""
	}
	return RiskWrites, "config"
}
