package policy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// proof is a run of one row of the table: args run without a shell in a
// fresh directory (HOME too) after files and pre, and marker must exist
// afterwards (or gone must be gone): the option did what the row says.
type proof struct {
	args   []string
	files  map[string]string // a name ending .sh is made executable
	pre    [][]string
	stdin  string
	env    []string
	marker string // default "M"
	gone   string
}

const touchScript = "#!/bin/sh\ntouch \"$(dirname \"$0\")/M\"\n"

func gitRepo(extra ...[]string) [][]string {
	return append([][]string{{"git", "init", "-q", "."}, {"git", "add", "-A"}, {"git", "commit", "-q", "--allow-empty", "-m", "one"},
		{"git", "commit", "-q", "--allow-empty", "-m", "two"}}, extra...)
}

// proofs are the runs, by row: "prog" for a program taking a risk with
// any arguments or a wrapper, "prog flag", "prog sub flag", "prog sub",
// "prog operand".
var proofs = map[string]proof{
	"nice":                {args: []string{"nice", "-n", "1", "sh", "-c", "touch M"}},
	"nohup":               {args: []string{"nohup", "sh", "-c", "touch M"}},
	"timeout":             {args: []string{"timeout", "60", "sh", "-c", "touch M"}},
	"stdbuf":              {args: []string{"stdbuf", "-oL", "sh", "-c", "touch M"}},
	"ionice":              {args: []string{"ionice", "-c", "3", "sh", "-c", "touch M"}},
	"taskset":             {args: []string{"taskset", "0x1", "sh", "-c", "touch M"}},
	"setsid":              {args: []string{"setsid", "-w", "sh", "-c", "touch M"}},
	"time":                {args: []string{"time", "sh", "-c", "touch M"}},
	"time -o":             {args: []string{"time", "-o", "M", "true"}},
	"time --output":       {args: []string{"time", "--output=M", "true"}},
	"chrt":                {args: []string{"chrt", "-o", "0", "sh", "-c", "touch M"}},
	"flock":               {args: []string{"flock", "L", "sh", "-c", "touch M"}},
	"flock -c":            {args: []string{"flock", "L", "-c", "touch M"}},
	"flock --command":     {args: []string{"flock", "L", "--command", "touch M"}},
	"strace":              {args: []string{"strace", "-o", "/dev/null", "sh", "-c", "touch M"}},
	"strace -o":           {args: []string{"strace", "-o", "M", "true"}},
	"strace --output":     {args: []string{"strace", "--output=M", "true"}},
	"unshare":             {args: []string{"unshare", "sh", "-c", "touch M"}},
	"env":                 {args: []string{"env", "-i", "sh", "-c", "touch M"}},
	"env -S":              {args: []string{"env", "-S", "sh -c 'touch M'"}},
	"env --split-string":  {args: []string{"env", "--split-string=sh -c 'touch M'"}},
	"xargs":               {args: []string{"xargs", "find"}, stdin: ". -maxdepth 0 -exec touch M ;"},
	"gdb":                 {args: []string{"gdb", "-batch", "-ex", "shell touch M"}},
	"script":              {args: []string{"script", "-qc", "touch M", "/dev/null"}},
	"vim":                 {args: []string{"vim", "-Nes", "-c", `call system("touch M")`, "-c", "qa!"}},
	"vi":                  {args: []string{"vi", "-Nes", "-c", `call system("touch M")`, "-c", "qa!"}},
	"ex":                  {args: []string{"ex", "-Nes", "-c", `call system("touch M")`, "-c", "qa!"}},
	"view":                {args: []string{"view", "-Nes", "-c", `call system("touch M")`, "-c", "qa!"}},
	"vimdiff":             {args: []string{"vimdiff", "-Nes", "-c", `call system("touch M")`, "-c", "qa!"}},
	"rvim":                {args: []string{"rvim", "-Nes", "-c", "w M", "-c", "qa!"}},
	"ed":                  {args: []string{"ed", "-s"}, stdin: "!touch M\nq\n"},
	"sh -c":               {args: []string{"sh", "-c", "touch M"}},
	"dash -c":             {args: []string{"dash", "-c", "touch M"}},
	"bash -c":             {args: []string{"bash", "-c", "touch M"}},
	"bash -i":             {args: []string{"bash", "-i", "-c", "true"}, files: map[string]string{".bashrc": "touch M\n"}},
	"bash --rcfile":       {args: []string{"bash", "--rcfile", "R", "-i", "-c", "true"}, files: map[string]string{"R": "touch M\n"}},
	"bash --init-file":    {args: []string{"bash", "--init-file", "R", "-i", "-c", "true"}, files: map[string]string{"R": "touch M\n"}},
	"python3 -c":          {args: []string{"python3", "-c", "open('M','w')"}},
	"perl -e":             {args: []string{"perl", "-e", "open(F,'>M')"}},
	"perl -E":             {args: []string{"perl", "-E", "open(F,'>M')"}},
	"node -e":             {args: []string{"node", "-e", "require('fs').writeFileSync('M','')"}},
	"node --eval":         {args: []string{"node", "--eval", "require('fs').writeFileSync('M','')"}},
	"node -p":             {args: []string{"node", "-p", "require('fs').writeFileSync('M','')"}},
	"node --print":        {args: []string{"node", "--print", "require('fs').writeFileSync('M','')"}},
	"node -r":             {args: []string{"node", "-r", "./p.js", "-e", "1"}, files: map[string]string{"p.js": "require('fs').writeFileSync('M','')"}},
	"node --require":      {args: []string{"node", "--require", "./p.js", "-e", "1"}, files: map[string]string{"p.js": "require('fs').writeFileSync('M','')"}},
	"node --import":       {args: []string{"node", "--import", "./p.mjs", "-e", "1"}, files: map[string]string{"p.mjs": "import fs from 'fs'; fs.writeFileSync('M','')"}},
	"awk operand":         {args: []string{"awk", `BEGIN{system("touch M")}`}},
	"awk -f":              {args: []string{"awk", "-f", "P"}, files: map[string]string{"P": `BEGIN{system("touch M")}`}},
	"mawk operand":        {args: []string{"mawk", `BEGIN{print "x" > "M"}`}},
	"mawk -f":             {args: []string{"mawk", "-f", "P"}, files: map[string]string{"P": `BEGIN{"touch M" | getline}`}},
	"gawk operand":        {args: []string{"gawk", `BEGIN{print "touch M" | "sh"}`}},
	"gawk -f":             {args: []string{"gawk", "-f", "P"}, files: map[string]string{"P": `BEGIN{system("touch M")}`}},
	"gawk --file":         {args: []string{"gawk", "--file=P"}, files: map[string]string{"P": `BEGIN{system("touch M")}`}},
	"gawk -i":             {args: []string{"gawk", "-i", "./P", "BEGIN{}"}, files: map[string]string{"P": `BEGIN{system("touch M")}`}},
	"gawk --include":      {args: []string{"gawk", "--include=./P", "BEGIN{}"}, files: map[string]string{"P": `BEGIN{system("touch M")}`}},
	"gawk -e":             {args: []string{"gawk", "-e", `BEGIN{system("touch M")}`}},
	"gawk --source":       {args: []string{"gawk", "--source", `BEGIN{system("touch M")}`}},
	"gawk -o":             {args: []string{"gawk", "-oM", "BEGIN{}"}},
	"gawk --pretty-print": {args: []string{"gawk", "--pretty-print=M", "BEGIN{}"}},
	"sed operand":         {args: []string{"sed", "-n", "e touch M", "F"}, files: map[string]string{"F": "x\n"}},
	"sed -f":              {args: []string{"sed", "-n", "-f", "S", "F"}, files: map[string]string{"F": "x\n", "S": "1w M\n"}},
	"sed --file":          {args: []string{"sed", "-n", "--file=S", "F"}, files: map[string]string{"F": "x\n", "S": "s/x/touch M/e\n"}},
	"sed -i":              {args: []string{"sed", "-i", "s/x/y/", "F"}, files: map[string]string{"F": "x\n"}, gone: "x"},
	"sed --in-place":      {args: []string{"sed", "--in-place", "s/x/y/", "F"}, files: map[string]string{"F": "x\n"}, gone: "x"},
	"find -exec":          {args: []string{"find", ".", "-maxdepth", "0", "-exec", "touch", "M", ";"}},
	"find -execdir":       {args: []string{"find", ".", "-maxdepth", "0", "-execdir", "touch", "M", ";"}},
	"find -ok":            {args: []string{"find", ".", "-maxdepth", "0", "-ok", "touch", "M", ";"}, stdin: "y\n"},
	"find -okdir":         {args: []string{"find", ".", "-maxdepth", "0", "-okdir", "touch", "M", ";"}, stdin: "y\n"},
	"find -delete":        {args: []string{"find", "D", "-delete"}, files: map[string]string{"D": ""}, gone: "D"},
	"find -fprint":        {args: []string{"find", ".", "-maxdepth", "0", "-fprint", "M"}},
	"find -fprint0":       {args: []string{"find", ".", "-maxdepth", "0", "-fprint0", "M"}},
	"find -fprintf":       {args: []string{"find", ".", "-maxdepth", "0", "-fprintf", "M", "%p"}},
	"find -fls":           {args: []string{"find", ".", "-maxdepth", "0", "-fls", "M"}},
	"sort -o":             {args: []string{"sort", "-o", "M", "F"}, files: map[string]string{"F": "b\na\n"}},
	"sort --output":       {args: []string{"sort", "--output=M", "F"}, files: map[string]string{"F": "b\na\n"}},
	"sort --compress-program": {args: []string{"sort", "-S", "100K", "--compress-program=./C.sh", "-o", "/dev/null", "N"},
		files: map[string]string{"C.sh": "#!/bin/sh\ntouch M\nexec gzip \"$@\"\n", "N": strings.Repeat("12345678\n", 100000)}},
	"make -f":            {args: []string{"make", "-f", "P"}, files: map[string]string{"P": "all:\n\ttouch M\n"}},
	"make --file":        {args: []string{"make", "--file=P"}, files: map[string]string{"P": "all:\n\ttouch M\n"}},
	"make --makefile":    {args: []string{"make", "--makefile=P"}, files: map[string]string{"P": "all:\n\ttouch M\n"}},
	"make -C":            {args: []string{"make", "-C", "D"}, files: map[string]string{"D/Makefile": "all:\n\ttouch ../M\n"}},
	"make --directory":   {args: []string{"make", "--directory=D"}, files: map[string]string{"D/Makefile": "all:\n\ttouch ../M\n"}},
	"make --eval":        {args: []string{"make", "--eval=$(shell touch M)", "-f", "/dev/null"}},
	"make -I":            {args: []string{"make", "-I", "D"}, files: map[string]string{"Makefile": "include x.mk\n", "D/x.mk": "all:\n\ttouch M\n"}},
	"make --include-dir": {args: []string{"make", "--include-dir=D"}, files: map[string]string{"Makefile": "include x.mk\n", "D/x.mk": "all:\n\ttouch M\n"}},
	"tar --to-command":   {args: []string{"tar", "--to-command=sh -c 'touch M'", "-xf", "A.tar"}, pre: [][]string{{"tar", "-cf", "A.tar", "F"}}, files: map[string]string{"F": "x"}},
	"tar --use-compress-program": {args: []string{"tar", "--use-compress-program=./C.sh", "-cf", "A.tgz", "F"},
		files: map[string]string{"F": "x", "C.sh": "#!/bin/sh\ntouch M\nexec gzip \"$@\"\n"}},
	"tar -I": {args: []string{"tar", "-I", "./C.sh", "-cf", "A.tgz", "F"},
		files: map[string]string{"F": "x", "C.sh": "#!/bin/sh\ntouch M\nexec gzip \"$@\"\n"}},
	"tar --checkpoint-action": {args: []string{"tar", "--checkpoint=1", "--checkpoint-action=exec=touch M", "-cf", "A.tar", "F"}, files: map[string]string{"F": "x"}},
	"tar -x":                  {args: []string{"tar", "-xf", "A.tar"}, pre: [][]string{{"tar", "-cf", "A.tar", "M"}, {"rm", "M"}}, files: map[string]string{"M": "x"}},
	"tar --extract":           {args: []string{"tar", "--extract", "-f", "A.tar"}, pre: [][]string{{"tar", "-cf", "A.tar", "M"}, {"rm", "M"}}, files: map[string]string{"M": "x"}},
	"tar --get":               {args: []string{"tar", "--get", "-f", "A.tar"}, pre: [][]string{{"tar", "-cf", "A.tar", "M"}, {"rm", "M"}}, files: map[string]string{"M": "x"}},
	"tar operand":             {args: []string{"tar", "xf", "A.tar"}, pre: [][]string{{"tar", "-cf", "A.tar", "M"}, {"rm", "M"}}, files: map[string]string{"M": "x"}},
	"tar -c":                  {args: []string{"tar", "-cf", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar --create":            {args: []string{"tar", "--create", "-f", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar -r":                  {args: []string{"tar", "-rf", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar --append":            {args: []string{"tar", "--append", "-f", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar -u":                  {args: []string{"tar", "-uf", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar --update":            {args: []string{"tar", "--update", "-f", "M", "F"}, files: map[string]string{"F": "x"}},
	"tar --delete":            {args: []string{"tar", "--delete", "-f", "A.tar", "F"}, pre: [][]string{{"tar", "-cf", "A.tar", "F"}}, files: map[string]string{"F": "x"}, gone: "F-in-A.tar"},
	"rsync -e":                {args: []string{"rsync", "-e", "./S.sh", "h:x", "y"}, files: map[string]string{"S.sh": touchScript}},
	"rsync --rsh":             {args: []string{"rsync", "--rsh=./S.sh", "h:x", "y"}, files: map[string]string{"S.sh": touchScript}},
	"rsync --rsync-path": {args: []string{"rsync", "-e", "./R.sh", "--rsync-path=touch M; rsync", "h:x", "y"},
		files: map[string]string{"R.sh": "#!/bin/sh\nshift\nexec sh -c \"$*\"\n"}},
	"rsync --log-file":         {args: []string{"rsync", "--log-file=M", "F", "G"}, files: map[string]string{"F": "x"}},
	"rsync --write-batch":      {args: []string{"rsync", "--write-batch=M", "F", "G"}, files: map[string]string{"F": "x"}},
	"rsync --only-write-batch": {args: []string{"rsync", "--only-write-batch=M", "F", "G"}, files: map[string]string{"F": "x"}},
	"zip -TT":                  {args: []string{"zip", "-T", "-TT", "touch M", "Z.zip"}, pre: [][]string{{"zip", "-q", "Z.zip", "F"}}, files: map[string]string{"F": "x"}},
	"zip --unzip-command":      {args: []string{"zip", "-T", "--unzip-command", "touch M", "Z.zip"}, pre: [][]string{{"zip", "-q", "Z.zip", "F"}}, files: map[string]string{"F": "x"}},
	"curl -o":                  {args: []string{"curl", "-s", "-o", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl --output":            {args: []string{"curl", "-s", "--output", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl -O":                  {args: []string{"curl", "-s", "-O", "--output-dir", "D", "file://DIR/F"}, files: map[string]string{"F": "x", "D/.keep": ""}, marker: "D/F"},
	"curl --remote-name":       {args: []string{"curl", "-s", "--remote-name", "--output-dir", "D", "file://DIR/F"}, files: map[string]string{"F": "x", "D/.keep": ""}, marker: "D/F"},
	"curl --remote-name-all":   {args: []string{"curl", "-s", "--remote-name-all", "--output-dir", "D", "file://DIR/F"}, files: map[string]string{"F": "x", "D/.keep": ""}, marker: "D/F"},
	"curl --output-dir":        {args: []string{"curl", "-s", "-O", "--output-dir", "D", "file://DIR/F"}, files: map[string]string{"F": "x", "D/.keep": ""}, marker: "D/F"},
	"curl -D":                  {args: []string{"curl", "-s", "-D", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl --dump-header":       {args: []string{"curl", "-s", "--dump-header", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl --trace":             {args: []string{"curl", "-s", "--trace", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl --trace-ascii":       {args: []string{"curl", "-s", "--trace-ascii", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl --stderr":            {args: []string{"curl", "--stderr", "M", "file://DIR/nothing"}},
	"curl --libcurl":           {args: []string{"curl", "-s", "--libcurl", "M", "file://DIR/F"}, files: map[string]string{"F": "x"}},
	"curl -K":                  {args: []string{"curl", "-s", "-K", "C", "file://DIR/F"}, files: map[string]string{"F": "x", "C": "output = \"M\"\n"}},
	"curl --config":            {args: []string{"curl", "-s", "--config", "C", "file://DIR/F"}, files: map[string]string{"F": "x", "C": "output = \"M\"\n"}},
	"ssh -o":                   {args: []string{"ssh", "-o", "ProxyCommand=sh -c 'touch M'", "-o", "BatchMode=yes", "h"}},
	"ssh -F":                   {args: []string{"ssh", "-F", "C", "-o", "BatchMode=yes", "h"}, files: map[string]string{"C": "Host *\n  ProxyCommand sh -c 'touch M'\n"}},
	"ssh -E":                   {args: []string{"ssh", "-E", "M", "-v", "-o", "ProxyCommand=false", "-o", "BatchMode=yes", "h"}},
	"scp -S":                   {args: []string{"scp", "-S", "./S.sh", "h:x", "y"}, files: map[string]string{"S.sh": touchScript}},
	"scp -o":                   {args: []string{"scp", "-o", "ProxyCommand=sh -c 'touch M'", "-o", "BatchMode=yes", "h:x", "y"}},
	"scp -F":                   {args: []string{"scp", "-F", "C", "-o", "BatchMode=yes", "h:x", "y"}, files: map[string]string{"C": "Host *\n  ProxyCommand sh -c 'touch M'\n"}},
	"go test -exec":            {args: []string{"go", "test", "-exec", "./X.sh", "."}, files: goModule("X.sh", "#!/bin/sh\ntouch \"$(dirname \"$0\")/M\"\nexec \"$@\"\n")},
	"go build -toolexec": {args: []string{"go", "build", "-toolexec", "DIR/X.sh", "."},
		files: goModule("X.sh", "#!/bin/sh\ntouch \"$(dirname \"$0\")/M\"\nexec \"$@\"\n")},
	"go test -coverprofile": {args: []string{"go", "test", "-coverprofile=M", "."}, files: goModule()},
	"go env -w":             {args: []string{"go", "env", "-w", "GOFLAGS=-v"}, env: []string{"GOENV=DIR/M"}},
	"go -C":                 {args: []string{"go", "-C", "D", "generate", "."}, files: map[string]string{"D/go.mod": "module x\n\ngo 1.21\n", "D/x.go": "package x\n\n//go:generate touch ../M\n"}},
	"git -c":                {args: []string{"git", "-c", "alias.x=!touch M", "x"}, pre: gitRepo()},
	"git --config-env":      {args: []string{"git", "--config-env=alias.x=A", "x"}, env: []string{"A=!touch M"}, pre: gitRepo()},
	"git --exec-path":       {args: []string{"git", "--exec-path=DIR/E", "x"}, files: map[string]string{"E/git-x.sh": touchScript}, pre: [][]string{{"mv", "E/git-x.sh", "E/git-x"}}, marker: "E/M"},
	"git -C":                {args: []string{"git", "-C", "R", "x"}, pre: [][]string{{"git", "init", "-q", "R"}, {"git", "-C", "R", "config", "alias.x", "!touch M"}}, marker: "R/M"},
	"git --git-dir":         {args: []string{"git", "--git-dir=R/.git", "x"}, pre: [][]string{{"git", "init", "-q", "R"}, {"git", "-C", "R", "config", "alias.x", "!touch M"}}},
	"git --work-tree": {args: []string{"git", "--git-dir=R/.git", "--work-tree=W", "checkout", "-f", "HEAD", "--", "."},
		pre: [][]string{{"git", "init", "-q", "R"}, {"sh", "-c", "cd R && echo x > M && git add M && git commit -qm x && rm M"}, {"mkdir", "W"}}, marker: "W/M"},
	"git diff --output":                   {args: []string{"git", "diff", "--no-index", "--output=M", "a", "b"}, files: map[string]string{"a": "1\n", "b": "2\n"}},
	"git log --output":                    {args: []string{"git", "log", "--output=M"}, pre: gitRepo()},
	"git show --output":                   {args: []string{"git", "show", "--output=M"}, pre: gitRepo()},
	"git whatchanged --output":            {args: []string{"git", "whatchanged", "--output=M"}, pre: gitRepo()},
	"git diff-tree --output":              {args: []string{"git", "diff-tree", "--output=M", "HEAD"}, pre: gitRepo()},
	"git diff-index --output":             {args: []string{"git", "diff-index", "--output=M", "HEAD"}, pre: gitRepo()},
	"git diff-files --output":             {args: []string{"git", "diff-files", "--output=M"}, pre: gitRepo()},
	"git range-diff --output":             {args: []string{"git", "range-diff", "--output=M", "HEAD~1..HEAD", "HEAD~1..HEAD"}, pre: gitRepo()},
	"git format-patch -o":                 {args: []string{"git", "format-patch", "-1", "-o", "M"}, pre: gitRepo()},
	"git format-patch --output-directory": {args: []string{"git", "format-patch", "-1", "--output-directory=M"}, pre: gitRepo()},
	"git format-patch --output":           {args: []string{"git", "format-patch", "-1", "--output=M"}, pre: gitRepo()},
	"git grep -O":                         {args: []string{"git", "grep", "-Otouch M", "x"}, files: map[string]string{"f": "x\n"}, pre: gitRepo()},
	"git grep --open-files-in-pager":      {args: []string{"git", "grep", "--open-files-in-pager=touch M", "x"}, files: map[string]string{"f": "x\n"}, pre: gitRepo()},
	"git rebase -x":                       {args: []string{"git", "rebase", "-x", "touch M", "HEAD~1"}, pre: gitRepo()},
	"git rebase --exec":                   {args: []string{"git", "rebase", "--exec=touch M", "HEAD~1"}, pre: gitRepo()},
	"git difftool -x":                     {args: []string{"git", "difftool", "-y", "-x", "touch M", "HEAD~1"}, files: map[string]string{"f": "x\n"}, pre: gitRepo([]string{"sh", "-c", "echo y > f"})},
	"git difftool --extcmd":               {args: []string{"git", "difftool", "-y", "--extcmd=touch M", "HEAD~1"}, files: map[string]string{"f": "x\n"}, pre: gitRepo([]string{"sh", "-c", "echo y > f"})},
	"git clone -u":                        {args: []string{"git", "clone", "-q", "-u", "touch DIR/M; git-upload-pack", "file://DIR/R", "C"}, pre: [][]string{{"git", "init", "-q", "R"}}},
	"git clone --upload-pack":             {args: []string{"git", "clone", "-q", "--upload-pack=touch DIR/M; git-upload-pack", "file://DIR/R", "C"}, pre: [][]string{{"git", "init", "-q", "R"}}},
	"git clone --template": {args: []string{"git", "clone", "-q", "--template=T", "R", "C"}, files: map[string]string{"T/hooks/post-checkout.sh": "#!/bin/sh\ntouch DIR/M\n"},
		pre: [][]string{{"mv", "T/hooks/post-checkout.sh", "T/hooks/post-checkout"}, {"git", "init", "-q", "R"}, {"git", "-C", "R", "commit", "-q", "--allow-empty", "-m", "x"}}},
	"git clone -c":                 {args: []string{"git", "clone", "-q", "-c", "alias.x=!touch M", "R", "C"}, pre: [][]string{{"git", "init", "-q", "R"}}, marker: "C/.git/config~alias"},
	"git clone --config":           {args: []string{"git", "clone", "-q", "--config=alias.x=!touch M", "R", "C"}, pre: [][]string{{"git", "init", "-q", "R"}}, marker: "C/.git/config~alias"},
	"git clone --separate-git-dir": {args: []string{"git", "clone", "-q", "--separate-git-dir=M", "R", "C"}, pre: [][]string{{"git", "init", "-q", "R"}}},
	"git init --separate-git-dir":  {args: []string{"git", "init", "-q", "--separate-git-dir=M", "C"}},
	"git init --template":          {args: []string{"git", "init", "-q", "--template=T", "C"}, files: map[string]string{"T/hooks/x": "x"}, marker: "C/.git/hooks/x"},
	"git ls-remote --upload-pack":  {args: []string{"git", "ls-remote", "--upload-pack=touch DIR/M; git-upload-pack", "file://DIR/R"}, pre: [][]string{{"git", "init", "-q", "R"}}},
	"git fetch --upload-pack":      {args: []string{"git", "fetch", "-q", "--upload-pack=touch DIR/M; git-upload-pack", "file://DIR/R"}, pre: [][]string{{"git", "init", "-q", "R"}, {"git", "init", "-q", "."}}},
	"git push --receive-pack": {args: []string{"git", "push", "-q", "--receive-pack=touch DIR/M; git-receive-pack", "file://DIR/R", "HEAD:refs/heads/x"},
		pre: append(gitRepo(), []string{"git", "init", "-q", "--bare", "R"})},
	"git push --exec": {args: []string{"git", "push", "-q", "--exec=touch DIR/M; git-receive-pack", "file://DIR/R", "HEAD:refs/heads/x"},
		pre: append(gitRepo(), []string{"git", "init", "-q", "--bare", "R"})},
	"git archive -o":       {args: []string{"git", "archive", "-o", "M", "HEAD"}, pre: gitRepo()},
	"git archive --output": {args: []string{"git", "archive", "--output=M", "HEAD"}, pre: gitRepo()},
	"git operand":          {args: []string{"git", "config", "alias.x", "!touch M"}, pre: gitRepo(), marker: ".git/config~alias"},
	"git submodule": {args: []string{"git", "submodule", "foreach", "touch DIR/M"},
		pre: append([][]string{{"git", "init", "-q", "R"}, {"git", "-C", "R", "commit", "-q", "--allow-empty", "-m", "x"}},
			gitRepo([]string{"git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", "DIR/R", "s"})...),
		files: map[string]string{".gitignore": "R/\n"}},
	"npm exec": {args: []string{"npm", "exec", "--offline", "--", "sh", "-c", "touch M"}, files: map[string]string{"package.json": "{}"}},
	"npm --script-shell": {args: []string{"npm", "run", "--offline", "t", "--script-shell=./S.sh"},
		files: map[string]string{"package.json": `{"scripts":{"t":"true"}}`, "S.sh": touchScript}},
	"npm --userconfig": {args: []string{"npm", "run", "--offline", "t", "--userconfig=C"},
		files: map[string]string{"package.json": `{"scripts":{"t":"true"}}`, "S.sh": touchScript, "C": "script-shell=DIR/S.sh\n"}},
	"npm config": {args: []string{"npm", "config", "set", "script-shell=x"}, marker: ".npmrc"},
	"npm set":    {args: []string{"npm", "set", "script-shell=x"}, marker: ".npmrc"},
	"cargo --config": {args: []string{"cargo", "build", "--offline", "--config", `build.rustc-wrapper="DIR/W.sh"`},
		files: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n", "src/main.rs": "fn main() {}\n",
			"W.sh": "#!/bin/sh\ntouch \"$(dirname \"$0\")/M\"\nexec \"$@\"\n"}},
}

// proofSkips are the rows not run here, and why.
var proofSkips = map[string]string{
	"sudo": "needs a sudoers entry", "doas": "needs doas.conf", "chroot": "needs a root file system to run in",
	"busybox": "not installed here", "command": "a shell builtin, not a program", "exec": "a shell builtin, not a program",
	"eval": "a shell builtin: runs its arguments as shell code", "source": "a shell builtin: runs a file as shell code",
	".": "a shell builtin: runs a file as shell code", "watch": "draws on a terminal (runs its arguments with sh -c)",
	"less": "less writes a log, reads lesskey and runs +commands only on a terminal", "more": "runs +commands only on a terminal",
	"man": "pages through -P and -H only on a terminal", "parallel": "not installed here", "npx": "fetches from the registry",
	"go run": "go run and go install of module@version fetch from the network",
	"go":     "each build of the go command costs seconds: -exec, -toolexec, -coverprofile, -C and env -w are run; the other flags are the same families (go help testflag, go help build)",
}

// goModule is a Go module with one test, and more files.
func goModule(more ...string) map[string]string {
	m := map[string]string{"go.mod": "module x\n\ngo 1.21\n", "x.go": "package main\n\nfunc main() {}\n", "x_test.go": "package main\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

// tableRows are the table's rows, by the names proofs uses.
func tableRows() []string {
	var out []string
	for name, p := range programs {
		switch {
		case p.always != "" || p.wrap != nil:
			out = append(out, name)
		}
		for _, o := range p.opts {
			out = append(out, name+" "+o.flag)
		}
		for sub, opts := range p.subs {
			for _, o := range opts {
				out = append(out, name+" "+sub+" "+o.flag)
			}
		}
		for sub := range p.subAlways {
			out = append(out, name+" "+sub)
		}
		if p.operand != nil {
			out = append(out, name+" operand")
		}
	}
	sort.Strings(out)
	return out
}

// TestCommandTable_RunsEachProgram runs each row of the table that can
// run here: the option does what the row says (a marker file appears,
// or a file goes), and CommandRisk calls the same command a risk. A row
// not run says why.
func TestCommandTable_RunsEachProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs")
	}
	ran := 0
	for _, row := range tableRows() {
		t.Run(row, func(t *testing.T) {
			pr, ok := proofs[row]
			if !ok {
				why := proofSkips[row]
				if why == "" {
					why = proofSkips[strings.Join(strings.Fields(row)[:min(2, len(strings.Fields(row)))], " ")]
				}
				if why == "" {
					why = proofSkips[strings.Fields(row)[0]]
				}
				if why == "" {
					why = "no run written for this row yet"
				}
				t.Skipf("not run: %s", why)
			}
			if _, err := exec.LookPath(pr.args[0]); err != nil {
				t.Skipf("not run: %s is not installed here", pr.args[0])
			}
			dir := t.TempDir()
			fill := func(s string) string { return strings.ReplaceAll(s, "DIR", dir) }
			for name, body := range pr.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				mode := os.FileMode(0o644)
				if strings.HasSuffix(name, ".sh") {
					mode = 0o755
				}
				if err := os.WriteFile(p, []byte(fill(body)), mode); err != nil {
					t.Fatal(err)
				}
			}
			// The tool caches stay where they are (a fresh Go or Cargo
			// cache would rebuild the standard library); HOME is the
			// test's, for the rc files a row reads.
			realHome, _ := os.UserHomeDir()
			cache, _ := os.UserCacheDir()
			env := append(os.Environ(), "GOCACHE="+orDefault(os.Getenv("GOCACHE"), filepath.Join(cache, "go-build")),
				"GOMODCACHE="+orDefault(os.Getenv("GOMODCACHE"), filepath.Join(realHome, "go", "pkg", "mod")),
				"CARGO_HOME="+orDefault(os.Getenv("CARGO_HOME"), filepath.Join(realHome, ".cargo")),
				"RUSTUP_HOME="+orDefault(os.Getenv("RUSTUP_HOME"), filepath.Join(realHome, ".rustup")),
				"GOFLAGS=", "GOTOOLCHAIN=local", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t",
				"GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
				"GIT_TERMINAL_PROMPT=0", "npm_config_update_notifier=false", "PAGER=cat", "GIT_PAGER=cat")
			for _, e := range pr.env {
				env = append(env, fill(e))
			}
			run := func(args []string, stdin string) ([]byte, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hung program fails, never hangs the suite
				defer cancel()
				a := make([]string, len(args))
				for i, s := range args {
					a[i] = fill(s)
				}
				cmd := exec.CommandContext(ctx, a[0], a[1:]...)
				cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
				return cmd.CombinedOutput()
			}
			for _, c := range pr.pre {
				if out, err := run(c, ""); err != nil {
					t.Fatalf("setup %v: %v\n%s", c, err, out)
				}
			}
			out, _ := run(pr.args, pr.stdin) // the marker is the proof, not the exit status
			switch {
			case pr.gone != "":
				if g, ok := strings.CutSuffix(pr.gone, "-in-A.tar"); ok {
					if lst, _ := run([]string{"tar", "-tf", "A.tar"}, ""); strings.Contains(string(lst), g) {
						t.Errorf("%v: %s still in A.tar\n%s", pr.args, g, out)
					}
				} else if pr.gone == "x" {
					if b, _ := os.ReadFile(filepath.Join(dir, "F")); strings.Contains(string(b), "x") {
						t.Errorf("%v did not write F: %q\n%s", pr.args, b, out)
					}
				} else if _, err := os.Stat(filepath.Join(dir, pr.gone)); err == nil {
					t.Errorf("%v: %s is still there\n%s", pr.args, pr.gone, out)
				}
			default:
				marker, want, _ := strings.Cut(pr.marker, "~")
				if marker == "" {
					marker = "M"
				}
				b, err := os.ReadFile(filepath.Join(dir, marker))
				if err != nil && !isDir(filepath.Join(dir, marker)) {
					t.Fatalf("%v: no %s afterwards, the row is not shown\n%s", pr.args, marker, out)
				}
				if want != "" && !strings.Contains(string(b), want) {
					t.Errorf("%v: %s lacks %q", pr.args, marker, want)
				}
			}
			if why, risky := CommandRisk(pr.args); !risky {
				t.Errorf("CommandRisk(%q) takes no risk, though the run shows one", pr.args)
			} else {
				t.Logf("%s", why)
			}
			ran++
		})
	}
	t.Logf("%d rows run", ran)
}

func orDefault(v, d string) string {
	if v != "" {
		return v
	}
	return d
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
