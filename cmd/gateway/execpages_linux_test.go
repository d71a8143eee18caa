//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServe_ReleasesExecutablePages runs the real binary: once serve has
// released its executable's mapped pages, every read-only mapping of the
// executable is marked no-huge-page ("nh") and none is mapped a huge page
// at a time (FilePmdMapped 0, in each mapping and for the process), and
// the gateway still answers, its code mapped again as it runs.
func TestServe_ReleasesExecutablePages(t *testing.T) {
	bin := gatewayBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--config", childConfig(t, dir), "--listen", "127.0.0.1:0",
		"--log-format", "json", "--log-level", "debug")
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"CHILD_AGENT_TOKEN=" + childAgentToken, "CHILD_ADMIN_TOKEN=" + childAdminToken}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		readers.Wait() // both pipes at their end before Wait closes them
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	type released struct {
		bytes int64
		err   string
	}
	done := make(chan released, 1)
	var logged strings.Builder
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logged.WriteString(sc.Text() + "\n")
			var line struct {
				Msg   string `json:"msg"`
				Bytes int64  `json:"bytes"`
				Err   string `json:"err"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if strings.Contains(line.Msg, "the executable's mapped pages") {
				done <- released{line.Bytes, line.Err}
			}
		}
		close(done)
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("gateway not listening after 60 s")
	}
	var r released
	select {
	case got, ok := <-done:
		if !ok {
			t.Fatalf("gateway exited before releasing its pages:\n%s", logged.String())
		}
		r = got
	case <-time.After(60 * time.Second):
		t.Fatal("no release logged 60 s after start")
	}
	if r.err != "" || r.bytes <= 0 {
		t.Fatalf("release: %d bytes, error %q", r.bytes, r.err)
	}

	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz after the release: %d", resp.StatusCode)
	}

	exe, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	maps := executableMappings(t, cmd.Process.Pid, exe)
	nReleased := 0
	for _, m := range maps {
		switch {
		case strings.Contains(m.perms, "w"), m.anonymousKB > 0:
			// Writable, or holding a private copy of a page (the
			// relocated GOT of a dynamically linked build): left alone.
			if m.noHugePage {
				t.Errorf("%s %s (%d kB private copies) was released", m.addr, m.perms, m.anonymousKB)
			}
		case m.pmdMappedKB != 0 || !m.noHugePage:
			t.Errorf("%s %s: FilePmdMapped %d kB, VmFlags nh %v; want 0 kB and nh", m.addr, m.perms, m.pmdMappedKB, m.noHugePage)
		default:
			nReleased++
		}
	}
	if nReleased < 2 {
		t.Fatalf("%d mappings of %s released, want the code and the read-only data at least: %+v", nReleased, exe, maps)
	}
	if kb := smapsField(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/smaps_rollup", "FilePmdMapped:"); kb != 0 {
		t.Errorf("smaps_rollup FilePmdMapped %d kB, want 0", kb)
	}
}

// execMapping is one mapping of /proc/PID/smaps.
type execMapping struct {
	addr, perms string
	pmdMappedKB int64
	anonymousKB int64
	noHugePage  bool
}

// executableMappings reads the mappings of the file path from
// /proc/pid/smaps.
func executableMappings(t *testing.T, pid int, path string) []execMapping {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var maps []execMapping
	var cur *execMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case len(fields) >= 6 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			cur = nil
			if fields[5] == path {
				maps = append(maps, execMapping{addr: fields[0], perms: fields[1]})
				cur = &maps[len(maps)-1]
			}
		case cur == nil:
		case fields[0] == "FilePmdMapped:":
			cur.pmdMappedKB, _ = strconv.ParseInt(fields[1], 10, 64)
		case fields[0] == "Anonymous:":
			cur.anonymousKB, _ = strconv.ParseInt(fields[1], 10, 64)
		case fields[0] == "VmFlags:":
			for _, fl := range fields[1:] {
				cur.noHugePage = cur.noHugePage || fl == "nh"
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return maps
}

// smapsField is the kB figure of one field of an smaps-format file.
func smapsField(t *testing.T, file, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("%s %s: %v", file, line, err)
			}
			return kb
		}
	}
	t.Fatalf("%s has no %s", file, field)
	return 0
}
