// What a program does with its arguments: the table an approve rule on
// code:exec is judged by (see CommandRisk). Each entry says which
// arguments make the program run another program or code, write a file
// or read a config that can run code. TestCommandTable_RunsEachProgram
// runs the programs to show each row does what it says.

package policy

// Risk is what an argument makes a program do beyond its name.
type Risk string

// The risks an approve rule must not take on.
const (
	RiskRuns   Risk = "runs a program or code its arguments name"
	RiskWrites Risk = "writes a file its arguments name"
	RiskConfig Risk = "reads a config or script that can run code"
)

// optStyle is how a program spells its options.
type optStyle uint8

const (
	// gnu: -x (maybe bundled: -xzf, or with its value attached: -ofile)
	// and --long, --long=value, and any unambiguous prefix of --long.
	gnu optStyle = iota
	// goFlag: -name, --name, -name=value, --name=value (Go's flag package).
	goFlag
	// exact: the word itself (find's -exec).
	exact
)

// opt is one option that takes a risk. value says it takes a value in the
// next word when not attached (so the word after it is no operand).
type opt struct {
	flag  string
	risk  Risk
	value bool
}

// wrapSpec says where a wrapper's command starts: after its options
// (those in valued take the next word), then positional operands.
type wrapSpec struct {
	valued     []string
	positional int
	// feeds: the command gets more arguments from stdin (xargs): any
	// program of the table behind it is a risk.
	feeds bool
}

// program is what one program does with its arguments.
type program struct {
	style optStyle
	// always is a risk the program takes with any arguments (an editor,
	// a shell reading commands from a string).
	always Risk
	// wrap: the program runs the command in its arguments, which is
	// judged in turn.
	wrap *wrapSpec
	// opts are options that take a risk wherever they stand; valued are
	// other options that take a value (to find the operands).
	opts   []opt
	valued []string
	// subs are a subcommand's options (git diff, go test), by the first
	// operand; subAlways a subcommand that is a risk itself.
	subs      map[string][]opt
	subAlways map[string]Risk
	// operand judges the operands left after the options (awk's program
	// text, sed's script, tar's old-style letters).
	operand func(args, operands []string, values map[string][]string) (Risk, string)
}

func o(flag string, r Risk) opt  { return opt{flag: flag, risk: r} }
func ov(flag string, r Risk) opt { return opt{flag: flag, risk: r, value: true} }

// goBuildOpts are the options of every go command that builds.
var goBuildOpts = []opt{
	ov("-exec", RiskRuns), ov("-toolexec", RiskRuns), ov("-o", RiskWrites), ov("-modfile", RiskConfig),
	ov("-overlay", RiskConfig), ov("-coverprofile", RiskWrites), ov("-cpuprofile", RiskWrites),
	ov("-memprofile", RiskWrites), ov("-blockprofile", RiskWrites), ov("-mutexprofile", RiskWrites),
	ov("-trace", RiskWrites), ov("-outputdir", RiskWrites), ov("-test.coverprofile", RiskWrites),
	ov("-test.cpuprofile", RiskWrites), ov("-test.memprofile", RiskWrites), ov("-test.blockprofile", RiskWrites),
	ov("-test.mutexprofile", RiskWrites), ov("-test.trace", RiskWrites), ov("-test.outputdir", RiskWrites),
	ov("-test.testlogfile", RiskWrites), ov("-test.gocoverdir", RiskWrites), ov("-test.fuzzcachedir", RiskWrites),
}

// gitDiffOpts are the options of the commands that show a diff.
var gitDiffOpts = []opt{ov("--output", RiskWrites)}

// programs is the table, by program name (the base name of argv[0]).
var programs = map[string]program{
	// Wrappers: the command they run is judged.
	"nice":    {wrap: &wrapSpec{valued: []string{"-n", "--adjustment"}}},
	"nohup":   {wrap: &wrapSpec{}},
	"timeout": {wrap: &wrapSpec{valued: []string{"-k", "--kill-after", "-s", "--signal"}, positional: 1}},
	"stdbuf":  {wrap: &wrapSpec{valued: []string{"-i", "-o", "-e", "--input", "--output", "--error"}}},
	"ionice":  {wrap: &wrapSpec{valued: []string{"-c", "-n", "--class", "--classdata"}}},
	"taskset": {wrap: &wrapSpec{positional: 1}},
	"setsid":  {wrap: &wrapSpec{}},
	"command": {wrap: &wrapSpec{}},
	"exec":    {wrap: &wrapSpec{valued: []string{"-a"}}},
	"time":    {wrap: &wrapSpec{valued: []string{"-f", "--format"}}, opts: []opt{ov("-o", RiskWrites), ov("--output", RiskWrites)}},
	"chrt":    {wrap: &wrapSpec{positional: 1}},
	"chroot":  {wrap: &wrapSpec{positional: 1}},
	"sudo": {wrap: &wrapSpec{valued: []string{"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "--user", "--group", "--chdir"}},
		opts: []opt{o("-s", RiskRuns), o("-i", RiskRuns), o("-e", RiskWrites), o("--shell", RiskRuns), o("--login", RiskRuns), o("--edit", RiskWrites), o("-E", RiskConfig)}},
	"doas":    {wrap: &wrapSpec{valued: []string{"-u", "-C"}}, opts: []opt{o("-s", RiskRuns)}},
	"flock":   {wrap: &wrapSpec{valued: []string{"-w", "-E", "--timeout", "--conflict-exit-code"}, positional: 1}, opts: []opt{ov("-c", RiskRuns), ov("--command", RiskRuns)}},
	"strace":  {wrap: &wrapSpec{valued: []string{"-e", "-p", "-s", "-u", "-P", "-I", "-b", "-a", "-X"}}, opts: []opt{ov("-o", RiskWrites), ov("--output", RiskWrites)}},
	"ltrace":  {wrap: &wrapSpec{valued: []string{"-e", "-p", "-s", "-u", "-a", "-n", "-l", "-L", "-x"}}, opts: []opt{ov("-o", RiskWrites), ov("--output", RiskWrites)}},
	"unshare": {wrap: &wrapSpec{}},
	"busybox": {wrap: &wrapSpec{}},
	"env": {wrap: &wrapSpec{valued: []string{"-u", "--unset", "-C", "--chdir"}},
		opts: []opt{ov("-S", RiskRuns), ov("--split-string", RiskRuns)}},
	"xargs": {wrap: &wrapSpec{valued: []string{"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-L", "-l", "-n",
		"--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}, feeds: true}},
	// Whatever they run is in their arguments or their input.
	"watch":    {always: RiskRuns}, // joins its arguments and runs them with sh -c
	"parallel": {always: RiskRuns},
	"npx":      {always: RiskRuns},
	"eval":     {always: RiskRuns},
	"source":   {always: RiskRuns},
	".":        {always: RiskRuns},
	"gdb":      {always: RiskRuns},
	"script":   {always: RiskRuns},
	// Editors write any file and run commands (:!cmd, -c, +cmd, modelines).
	"vim": {always: RiskRuns}, "vi": {always: RiskRuns}, "nvim": {always: RiskRuns}, "view": {always: RiskRuns},
	"vimdiff": {always: RiskRuns}, "ex": {always: RiskRuns}, "gvim": {always: RiskRuns}, "rvim": {always: RiskWrites},
	"emacs": {always: RiskRuns}, "ed": {always: RiskRuns}, "nano": {always: RiskRuns},
	// Shells and interpreters: code in an option.
	"sh":     {opts: []opt{ov("-c", RiskRuns), o("-i", RiskConfig)}},
	"bash":   {opts: []opt{ov("-c", RiskRuns), o("-i", RiskConfig), ov("--rcfile", RiskConfig), ov("--init-file", RiskConfig)}},
	"dash":   {opts: []opt{ov("-c", RiskRuns), o("-i", RiskConfig)}},
	"zsh":    {opts: []opt{ov("-c", RiskRuns), o("-i", RiskConfig)}},
	"python": {opts: []opt{ov("-c", RiskRuns)}}, "python3": {opts: []opt{ov("-c", RiskRuns)}},
	"perl": {opts: []opt{ov("-e", RiskRuns), ov("-E", RiskRuns)}},
	"ruby": {opts: []opt{ov("-e", RiskRuns)}},
	"node": {opts: []opt{ov("-e", RiskRuns), ov("--eval", RiskRuns), ov("-p", RiskRuns), ov("--print", RiskRuns),
		ov("-r", RiskRuns), ov("--require", RiskRuns), ov("--import", RiskRuns)}},
	// Text tools whose program or script can run or write.
	"awk":  {valued: []string{"-F", "-v"}, opts: []opt{ov("-f", RiskConfig)}, operand: awkProgram},
	"mawk": {valued: []string{"-F", "-v"}, opts: []opt{ov("-f", RiskConfig)}, operand: awkProgram},
	"gawk": {valued: []string{"-F", "-v", "--assign", "--field-separator"}, opts: []opt{ov("-f", RiskConfig), ov("--file", RiskConfig),
		ov("-i", RiskConfig), ov("--include", RiskConfig), ov("-l", RiskRuns), ov("--load", RiskRuns), ov("-e", RiskRuns),
		ov("--source", RiskRuns), ov("-o", RiskWrites), ov("--pretty-print", RiskWrites)}, operand: awkProgram},
	"sed": {opts: []opt{ov("-f", RiskConfig), ov("--file", RiskConfig), o("-i", RiskWrites), o("--in-place", RiskWrites)},
		valued: []string{"-e", "--expression", "-l", "--line-length"}, operand: sedScript},
	"find": {style: exact, opts: []opt{o("-exec", RiskRuns), o("-execdir", RiskRuns), o("-ok", RiskRuns), o("-okdir", RiskRuns),
		o("-delete", RiskWrites), o("-fprint", RiskWrites), o("-fprint0", RiskWrites), o("-fprintf", RiskWrites), o("-fls", RiskWrites)}},
	"sort": {opts: []opt{ov("-o", RiskWrites), ov("--output", RiskWrites), ov("--compress-program", RiskRuns)},
		valued: []string{"-k", "-t", "-S", "-T", "--key", "--field-separator"}},
	"less": {opts: []opt{ov("-o", RiskWrites), ov("-O", RiskWrites), ov("--log-file", RiskWrites), ov("--LOG-FILE", RiskWrites),
		ov("-k", RiskConfig), ov("--lesskey-file", RiskConfig), ov("--lesskey-src", RiskConfig)}, operand: plusCommand},
	"more": {operand: plusCommand},
	"man": {opts: []opt{ov("-P", RiskRuns), ov("--pager", RiskRuns), ov("-H", RiskRuns), ov("--html", RiskRuns),
		ov("-C", RiskConfig), ov("--config-file", RiskConfig), o("-l", RiskConfig), o("--local-file", RiskConfig)}},
	"make": {opts: []opt{ov("-f", RiskConfig), ov("--file", RiskConfig), ov("--makefile", RiskConfig), ov("-C", RiskConfig),
		ov("--directory", RiskConfig), ov("--eval", RiskRuns), ov("-I", RiskConfig), ov("--include-dir", RiskConfig)},
		valued: []string{"-j", "-l", "-o", "-W"}},
	"tar": {opts: []opt{ov("--to-command", RiskRuns), ov("--use-compress-program", RiskRuns), ov("-I", RiskRuns),
		ov("--checkpoint-action", RiskRuns), ov("--info-script", RiskRuns), ov("-F", RiskRuns), ov("--new-volume-script", RiskRuns),
		ov("--rsh-command", RiskRuns), ov("--rmt-command", RiskRuns), o("-x", RiskWrites), o("--extract", RiskWrites),
		o("--get", RiskWrites), o("-c", RiskWrites), o("--create", RiskWrites), o("-r", RiskWrites), o("--append", RiskWrites),
		o("-u", RiskWrites), o("--update", RiskWrites), o("--delete", RiskWrites), o("-A", RiskWrites), o("--catenate", RiskWrites)},
		valued:  []string{"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from", "-b", "-H", "-K", "-L", "-N", "-V"},
		operand: tarLetters},
	"rsync": {opts: []opt{ov("-e", RiskRuns), ov("--rsh", RiskRuns), ov("--rsync-path", RiskRuns), ov("--log-file", RiskWrites),
		ov("--write-batch", RiskWrites), ov("--only-write-batch", RiskWrites), ov("-M", RiskRuns), ov("--remote-option", RiskRuns)},
		valued: []string{"--exclude", "--include", "--filter", "-f", "--files-from", "--exclude-from", "--include-from", "-T", "--temp-dir"}},
	"zip": {opts: []opt{ov("-TT", RiskRuns), ov("--unzip-command", RiskRuns)}},
	"curl": {opts: []opt{ov("-o", RiskWrites), ov("--output", RiskWrites), o("-O", RiskWrites), o("--remote-name", RiskWrites),
		o("--remote-name-all", RiskWrites), ov("--output-dir", RiskWrites), ov("-D", RiskWrites), ov("--dump-header", RiskWrites),
		ov("-c", RiskWrites), ov("--cookie-jar", RiskWrites), ov("--trace", RiskWrites), ov("--trace-ascii", RiskWrites),
		ov("--stderr", RiskWrites), ov("--libcurl", RiskWrites), ov("--etag-save", RiskWrites), ov("-K", RiskConfig), ov("--config", RiskConfig)},
		valued: []string{"-H", "--header", "-d", "--data", "-X", "--request", "-A", "--user-agent", "-u", "--user", "-e", "--referer", "-m", "--max-time"}},
	"wget": {opts: []opt{ov("-O", RiskWrites), ov("--output-document", RiskWrites), ov("-o", RiskWrites), ov("--output-file", RiskWrites),
		ov("-a", RiskWrites), ov("--append-output", RiskWrites), ov("-P", RiskWrites), ov("--directory-prefix", RiskWrites),
		ov("-e", RiskConfig), ov("--execute", RiskConfig), ov("--config", RiskConfig), ov("--use-askpass", RiskRuns)},
		valued: []string{"--header", "-U", "--user-agent", "-t", "--tries", "-T", "--timeout"}},
	"ssh": {opts: []opt{ov("-o", RiskRuns), ov("-F", RiskConfig), ov("-E", RiskWrites)},
		valued: []string{"-p", "-i", "-l", "-L", "-R", "-D", "-J", "-b", "-c", "-m", "-O", "-Q", "-S", "-W", "-w", "-e", "-I", "-B"}},
	"scp": {opts: []opt{ov("-S", RiskRuns), ov("-o", RiskRuns), ov("-F", RiskConfig)}, valued: []string{"-P", "-i", "-l", "-c", "-J", "-D", "-X"}},
	"cargo": {opts: []opt{ov("--config", RiskRuns), ov("--manifest-path", RiskConfig), ov("--target-dir", RiskWrites)},
		subAlways: map[string]Risk{"install": RiskWrites}},
	"pytest": {opts: []opt{ov("-p", RiskRuns), ov("-c", RiskConfig), ov("--config-file", RiskConfig), ov("--rootdir", RiskConfig),
		ov("--junitxml", RiskWrites), ov("--junit-xml", RiskWrites), ov("--basetemp", RiskWrites), ov("--confcutdir", RiskConfig)},
		valued: []string{"-k", "-m"}},
	"npm": {opts: []opt{ov("--script-shell", RiskRuns), ov("--node-options", RiskRuns), ov("--userconfig", RiskConfig),
		ov("--globalconfig", RiskConfig)},
		subAlways: map[string]Risk{"exec": RiskRuns, "x": RiskRuns, "config": RiskWrites, "set": RiskWrites, "explore": RiskRuns}},
	"go": {style: goFlag, valued: []string{"-C", "-run", "-bench", "-count", "-timeout", "-tags", "-p", "-ldflags", "-gcflags", "-mod", "-parallel", "-cpu", "-benchtime", "-skip", "-fuzz", "-fuzztime"},
		opts: []opt{ov("-C", RiskConfig)},
		subs: map[string][]opt{
			"test": goBuildOpts, "build": goBuildOpts, "vet": goBuildOpts, "install": goBuildOpts, "run": goBuildOpts,
			"list": goBuildOpts, "generate": goBuildOpts, "env": {o("-w", RiskWrites), o("-u", RiskWrites)},
		},
		operand: goRemoteRun},
	"git": {valued: []string{"--namespace", "--super-prefix"},
		opts: []opt{ov("-c", RiskRuns), ov("--config-env", RiskRuns), ov("--exec-path", RiskRuns), ov("-C", RiskConfig),
			ov("--git-dir", RiskConfig), ov("--work-tree", RiskWrites)},
		subs: map[string][]opt{
			"diff": gitDiffOpts, "log": gitDiffOpts, "show": gitDiffOpts, "whatchanged": gitDiffOpts, "diff-tree": gitDiffOpts,
			"diff-index": gitDiffOpts, "diff-files": gitDiffOpts, "range-diff": gitDiffOpts,
			"format-patch": {ov("--output", RiskWrites), ov("-o", RiskWrites), ov("--output-directory", RiskWrites)},
			"grep":         {o("-O", RiskRuns), o("--open-files-in-pager", RiskRuns)},
			"rebase":       {ov("-x", RiskRuns), ov("--exec", RiskRuns)},
			"difftool":     {ov("-x", RiskRuns), ov("--extcmd", RiskRuns)},
			"clone": {ov("-u", RiskRuns), ov("--upload-pack", RiskRuns), ov("-c", RiskRuns), ov("--config", RiskRuns),
				ov("--template", RiskConfig), ov("--separate-git-dir", RiskWrites)},
			"fetch":     {ov("--upload-pack", RiskRuns)},
			"pull":      {ov("--upload-pack", RiskRuns)},
			"ls-remote": {ov("--upload-pack", RiskRuns)},
			"push":      {ov("--receive-pack", RiskRuns), ov("--exec", RiskRuns)},
			"archive":   {ov("-o", RiskWrites), ov("--output", RiskWrites), ov("--exec", RiskRuns)},
			"init":      {ov("--template", RiskConfig), ov("--separate-git-dir", RiskWrites)},
			"send-email": {ov("--smtp-server", RiskRuns), ov("--to-cmd", RiskRuns), ov("--cc-cmd", RiskRuns),
				ov("--header-cmd", RiskRuns), ov("--sendmail-cmd", RiskRuns)},
		},
		subAlways: map[string]Risk{"filter-branch": RiskRuns, "bisect": RiskRuns, "submodule": RiskRuns, "mergetool": RiskRuns},
		operand:   gitConfigWrite},
}
