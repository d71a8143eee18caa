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
	{name: "shell start-up file", comps: []component{lit(".config"), lit("fish")}},
	{name: "shell start-up file", comps: []component{lit(".config"), lit("environment.d")}},
	{name: "autostart entry", comps: []component{lit(".config"), lit("autostart")}},
	{name: "systemd unit", comps: []component{lit(".config"), lit("systemd")}},
	{name: "git config", whole: true, comps: []component{lit(".gitconfig")}},
	{name: "git config", comps: []component{lit(".config"), lit("git")}},
	// SSH keys that let someone in (.ssh is forbidden outright, this says why).
	{name: "~/.ssh/authorized_keys", comps: []component{lit(".ssh"), glob("authorized_keys*", "authorized_keys")}},
	// A repository's hooks and config run code on the next git command.
	{name: ".git/hooks/", comps: []component{lit(".git"), lit("hooks")}},
	{name: ".git/config", comps: []component{lit(".git"), lit("config")}},
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
	comps, rooted := pathComps(p)
	return matchPathRules(persistencePoints, comps, rooted)
}
