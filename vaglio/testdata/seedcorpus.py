# Generates vaglio/testdata/seed_python.jsonl: random strings and what the
# seed's regexes (vaglio v1.1 §3, copied verbatim) say about them under
# CPython's re. Run: python3 seedcorpus.py > seed_python.jsonl
import json, random, re

PATH = [
    r"(^|/)\.ssh(/|$)",
    r"^/etc/(passwd|shadow|sudoers)",
    r"^/etc/ssh(/|$)",
    r"^/root(/|$)",
    r"^/boot(/|$)",
    r"^/sys(/|$)",
    r"^/proc(/[0-9]|$)",
    r"^/dev/(sd|nvme|mmcblk|loop)",
    r"\.aws/credentials",
    r"\.config/[^/]+/credentials\.env",
    r"\.gnupg(/|$)",
]
SHELL = [
    r"\brm\s+-rf?\s+/(\s|$)",
    r"\brm\s+-rf?\s+~(\s|$|/)",
    r"\bmkfs\b",
    r"\bdd\s+.*\bof=/dev/",
    r":\s*\(\s*\)\s*\{\s*:\|:&\s*\}",
    r"\bchmod\s+-?R?\s*0?77[0-9]\s+/",
]
PATH = [re.compile(p) for p in PATH]
SHELL = [re.compile(p) for p in SHELL]
HOME = "/home/roberto"

PIECES = ["/", "/", "/", "~", "~/", ".", "..", "ssh", ".ssh", "etc", "/etc/", "passwd", "shadow", "sudoers",
          "root", "/root", "boot", "sys", "proc", "/proc", "/proc/", "1", "dev", "/dev/", "sd", "nvme", "mmcblk",
          "loop", ".aws", "credentials", ".config", "credentials.env", ".gnupg", "gnupg", "rm", "rm ", "-rf", "-r",
          "-f", " ", " ", " ", "\t", "\n", "\v", "\f", "\x1c", "\x1f", "\x85", "\u00a0", "\u2003", "\u3000",
          "\u200b", "mkfs", "mkfs.ext4", "dd", "dd ", "of=", "of=/dev/", "null", "sda", "zero", ":", "(", ")",
          "{", "}", "|", "&", ";", ":|:&", "chmod", "chmod ", "-R", "R", "0", "777", "775", "0777", "x", "a",
          "é", "ä", "_", "9", "\"", "'", "\\", "$HOME", "*", "-", "=", "ü",
          "/etc/passwd", "/etc/ssh", "/sys", "/boot", "/.ssh", "/.gnupg", ".aws/credentials",
          "/.config/x/credentials.env", "/dev/sd", "/dev/loop"]

def pmatch(s):
    return any(p.search(s) for p in PATH)

def smatch(s):
    return any(p.search(s) for p in SHELL)

def expanduser(s):
    if s == "~" or s.startswith("~/"):
        return HOME + s[1:]
    return s

random.seed(16)
seen = set()
out = []
while len(out) < 3000:
    s = "".join(random.choice(PIECES) for _ in range(random.randint(1, 10)))
    if s in seen:
        continue
    seen.add(s)
    p, sh = pmatch(expanduser(s)), smatch(s)
    # keep every hit and a share of the misses
    if p or sh or random.random() < 0.25:
        out.append({"s": s, "path": p, "shell": sh})
for o in out:
    print(json.dumps(o, ensure_ascii=True))
