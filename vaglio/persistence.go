package vaglio

import "strings"

// persistencePoints are the files and directories where a write makes
// code run later, unasked: at the next shell start, login, cron tick,
// boot, program load or git command. Writing one is code execution, so
// fs:write on it asks a person every time, at every level, like
// code:exec (see PersistencePoint). Unanchored rules match in any
// directory (~/.bashrc, /home/other/.bashrc, a repo's .git/hooks/);
// none depends on the home directory, so a stored request can be checked
// again without it.
var persistencePoints = []pathRule{
	// Shell and session start-up files, in any home directory.
	{name: "shell start-up file", whole: true, comps: []component{glob(".bashrc", ".bashrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".bash_profile", ".bash_profile")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".bash_login", ".bash_login")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".bash_logout", ".bash_logout")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".profile", ".profile")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".zshrc", ".zshrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".zshenv", ".zshenv")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".zprofile", ".zprofile")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".zlogin", ".zlogin")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".zlogout", ".zlogout")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".cshrc", ".cshrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".tcshrc", ".tcshrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".kshrc", ".kshrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".mkshrc", ".mkshrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".xprofile", ".xprofile")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".xinitrc", ".xinitrc")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".xsession", ".xsession")}},
	{name: "shell start-up file", whole: true, comps: []component{glob(".pam_environment", ".pam_environment")}},
	{name: "shell start-up file", whole: true, comps: []component{lit(".bash_aliases")}},
	{name: "shell start-up file", comps: []component{lit(".oh-my-zsh")}},
	{name: "shell start-up file", comps: []component{lit(".config"), lit("zsh")}},
	{name: "shell start-up file", comps: []component{lit(".config"), lit("bash")}},
	{name: "shell start-up file", comps: []component{lit(".config"), lit("fish")}},
	{name: "shell start-up file", comps: []component{lit(".config"), lit("environment.d")}},
	{name: "autostart entry", comps: []component{lit(".config"), lit("autostart")}},
	{name: "systemd unit", comps: []component{lit(".config"), lit("systemd")}},
	{name: "systemd unit", comps: []component{lit(".local"), lit("share"), lit("systemd")}},
	// git reads config from more than .git/config: ~/.gitconfig and the
	// files it includes (include.path, includeIf, conventionally named
	// .gitconfig.local, work.gitconfig…), XDG's git/config, and in a git
	// directory (.git, or any *.git a "gitdir:" file or a bare clone
	// names) config, config.worktree, commondir (which moves the config
	// elsewhere), the linked worktrees' and submodules' git directories.
	// A .git that is a file ("gitdir: …") moves the whole git directory.
	{name: "git config", whole: true, comps: []component{lit(".git")}},
	{name: "git config", comps: []component{glob("*gitconfig*", ".gitconfig")}},
	{name: "git config", comps: []component{lit(".config"), lit("git")}},
	{name: ".git/config", comps: []component{glob("*.git", ".git"), glob("config*", "config")}},
	{name: ".git/config", comps: []component{glob("*.git", ".git"), lit("commondir")}},
	{name: ".git/config", comps: []component{glob("*.git", ".git"), lit("worktrees")}},
	{name: ".git/config", comps: []component{glob("*.git", ".git"), lit("modules")}},
	// Python runs every .pth file of a site directory (its "import" lines)
	// and sitecustomize/usercustomize from the site directories at every
	// start (and /etc/python*, below); not from the directory a script or
	// the shell is in, which it adds to sys.path only after site ran
	// (TestPersistencePoint_PythonStartUp runs python3), so a folder's
	// "dir/*" stays grantable.
	{name: "Python start-up file", comps: []component{glob("*-packages", "site-packages"), glob("*.pth", "x.pth")}},
	{name: "Python start-up file", comps: []component{glob("*-packages", "site-packages"), glob("sitecustomize*", "sitecustomize.py")}},
	{name: "Python start-up file", comps: []component{glob("*-packages", "site-packages"), glob("usercustomize*", "usercustomize.py")}},
	{name: "Python start-up file", whole: true, comps: []component{glob(".pythonrc*", ".pythonrc")}},
	// The hooks, plugins, MCP servers and settings of every agent the
	// gateway supports: each names commands the agent runs later (the
	// gateway's own hook among them).
	{name: "agent hook or settings", comps: []component{lit(".claude"), glob("settings*", "settings.json")}},
	{name: "agent hook or settings", comps: []component{lit(".claude"), lit("hooks")}},
	{name: "agent hook or settings", comps: []component{lit(".claude"), lit("plugins")}},
	{name: "agent hook or settings", whole: true, comps: []component{lit(".claude.json")}},
	{name: "agent hook or settings", whole: true, comps: []component{glob(".mcp.json*", ".mcp.json")}},
	{name: "agent hook or settings", comps: []component{lit(".codex")}},
	{name: "agent hook or settings", comps: []component{lit(".gemini")}},
	{name: "agent hook or settings", comps: []component{lit(".qwen")}},
	{name: "agent hook or settings", comps: []component{lit(".cursor")}},
	{name: "agent hook or settings", comps: []component{lit(".copilot")}},
	{name: "agent hook or settings", comps: []component{lit(".github"), lit("copilot")}},
	{name: "agent hook or settings", comps: []component{lit(".github"), lit("hooks")}},
	{name: "agent hook or settings", comps: []component{lit(".opencode")}},
	{name: "agent hook or settings", comps: []component{lit(".config"), lit("opencode")}},
	{name: "agent hook or settings", whole: true, comps: []component{glob("opencode.json*", "opencode.json")}},
	{name: "agent hook or settings", comps: []component{lit(".vscode"), glob("settings.json*", "settings.json")}},
	{name: "agent hook or settings", comps: []component{lit(".vscode"), glob("tasks.json*", "tasks.json")}},
	{name: "agent hook or settings", comps: []component{lit(".vscode"), glob("mcp.json*", "mcp.json")}},
	// Editors and debuggers read these at start and run what they say.
	{name: "editor start-up file", whole: true, comps: []component{glob("[._]vimrc*", ".vimrc")}},
	{name: "editor start-up file", whole: true, comps: []component{glob("[._]gvimrc*", ".gvimrc")}},
	{name: "editor start-up file", whole: true, comps: []component{glob("[._]exrc*", ".exrc")}},
	{name: "editor start-up file", whole: true, comps: []component{glob(".nvimrc*", ".nvimrc")}},
	{name: "editor start-up file", comps: []component{lit(".vim")}},
	{name: "editor start-up file", comps: []component{lit(".config"), lit("nvim")}},
	{name: "editor start-up file", comps: []component{lit(".local"), lit("share"), lit("nvim")}},
	{name: "editor start-up file", comps: []component{lit(".emacs.d")}},
	{name: "editor start-up file", comps: []component{lit(".config"), lit("emacs")}},
	{name: "editor start-up file", whole: true, comps: []component{glob(".emacs*", ".emacs")}},
	{name: "editor start-up file", whole: true, comps: []component{glob(".gdbinit*", ".gdbinit")}},
	{name: "editor start-up file", whole: true, comps: []component{glob(".lldbinit*", ".lldbinit")}},
	{name: "editor start-up file", whole: true, comps: []component{glob(".tmux.conf*", ".tmux.conf")}},
	{name: "editor start-up file", comps: []component{lit(".config"), lit("tmux")}},
	// Package managers' config that runs code: npm's script-shell and
	// node-options, yarn's yarnPath, pip's index (what an install runs),
	// cargo's runners and rustc wrappers, go's toolexec and GOFLAGS.
	{name: "package-manager config", whole: true, comps: []component{glob(".npmrc*", ".npmrc")}},
	{name: "package-manager config", whole: true, comps: []component{glob(".yarnrc*", ".yarnrc")}},
	{name: "package-manager config", whole: true, comps: []component{glob("*bunfig.toml", "bunfig.toml")}},
	{name: "package-manager config", comps: []component{lit(".config"), lit("npm")}},
	{name: "package-manager config", whole: true, comps: []component{glob("pip.conf*", "pip.conf")}},
	{name: "package-manager config", whole: true, comps: []component{glob("pip.ini*", "pip.ini")}},
	{name: "package-manager config", comps: []component{lit(".config"), lit("pip")}},
	{name: "package-manager config", comps: []component{lit(".pip")}},
	{name: "package-manager config", comps: []component{lit(".cargo"), glob("config*", "config.toml")}},
	{name: "package-manager config", whole: true, comps: []component{glob("go.env*", "go.env")}},
	{name: "package-manager config", comps: []component{lit(".config"), lit("go")}},
	// SSH keys that let someone in (.ssh is forbidden outright, this says why).
	{name: "~/.ssh/authorized_keys", comps: []component{lit(".ssh"), glob("authorized_keys*", "authorized_keys")}},
	// A repository's hooks and config run code on the next git command.
	{name: ".git/hooks/", comps: []component{glob("*.git", ".git"), lit("hooks")}},
	// System-wide start-up, scheduling, services and preloading.
	{name: "/etc/profile", anchored: true, comps: []component{lit("etc"), glob("profile*", "profile")}},
	{name: "/etc/profile.d", anchored: true, comps: []component{lit("etc"), lit("profile.d")}},
	{name: "/etc/bash.bashrc", anchored: true, comps: []component{lit("etc"), glob("bash*", "bash.bashrc")}},
	{name: "/etc/zsh", anchored: true, comps: []component{lit("etc"), glob("zsh*", "zshrc")}},
	{name: "/etc/environment", anchored: true, comps: []component{lit("etc"), lit("environment")}},
	{name: "/etc/ld.so.preload", anchored: true, comps: []component{lit("etc"), glob("ld.so.*", "ld.so.preload")}},
	{name: "cron", anchored: true, comps: []component{lit("etc"), glob("cron*", "crontab")}},
	{name: "cron", anchored: true, comps: []component{lit("etc"), lit("anacrontab")}},
	{name: "cron", anchored: true, comps: []component{lit("var"), lit("spool"), lit("cron")}},
	{name: "cron", anchored: true, comps: []component{lit("var"), lit("spool"), lit("anacron")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("etc"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("lib"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("usr"), lit("lib"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("run"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("usr"), lit("local"), lit("lib"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("usr"), lit("local"), lit("share"), lit("systemd")}},
	{name: "systemd unit", anchored: true, comps: []component{lit("usr"), lit("share"), lit("systemd")}},
	{name: "shell start-up file", anchored: true, comps: []component{lit("etc"), lit("fish")}},
	{name: "Python start-up file", anchored: true, comps: []component{lit("etc"), glob("python*", "python3")}},
	{name: "editor start-up file", anchored: true, comps: []component{lit("etc"), glob("vim*", "vimrc")}},
	{name: "package-manager config", anchored: true, comps: []component{lit("etc"), lit("npmrc")}},
	{name: "package-manager config", anchored: true, comps: []component{lit("etc"), lit("pip.conf")}},
	{name: "init script", anchored: true, comps: []component{lit("etc"), lit("init.d")}},
	{name: "init script", anchored: true, comps: []component{lit("etc"), lit("rc.local")}},
	{name: "autostart entry", anchored: true, comps: []component{lit("etc"), lit("xdg"), lit("autostart")}},
	{name: "login message script", anchored: true, comps: []component{lit("etc"), lit("update-motd.d")}},
	{name: "git config", anchored: true, comps: []component{lit("etc"), lit("gitconfig")}},
}

// PersistencePoint reports whether writing to p would make code run later
// (see persistencePoints) and names the rule. A glob matches when the
// shell would expand it to one (~/.bash*). The check is lexical and needs
// no home directory: ~/.bashrc is a .bashrc wherever ~ is.
func PersistencePoint(p string) (rule string, hit bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", false
	}
	var buf [16]string
	comps, rooted := splitComps(buf[:0], p)
	return persistenceMatcher.match(comps, rooted, !hasAnyByte(p, globInputSet))
}

// PersistenceWithin is PersistencePoint for what a grant on p may allow: a
// plain path is asked about as itself; a glob only when its fixed leading
// directories already are a persistence point (".git/hooks/*"), not when
// it merely could match one ("dir/*" and dir/opencode.json): a grant
// never allows writing a persistence point, MustAsk asks for each such
// write every time, so a folder's glob stays grantable.
func PersistenceWithin(p string) (rule string, hit bool) {
	p = strings.TrimSpace(p)
	i := strings.IndexAny(p, globInput)
	if i < 0 {
		return PersistencePoint(p)
	}
	dir := strings.TrimRight(p[:strings.LastIndex(p[:i], "/")+1], "/")
	if dir == "" {
		return "", false
	}
	return PersistencePoint(dir)
}

// persistenceMatcher is persistencePoints compiled.
var persistenceMatcher = compilePaths(persistencePoints)
