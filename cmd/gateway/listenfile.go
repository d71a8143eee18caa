package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metnos/gateway/config"
)

// The running server's address: serve records where it listens in a file
// beside the database (config.ListenFileName, among the gateway's own
// paths, so no agent writes it), whether --listen, GATEWAY_LISTEN or the
// config chose the address; `gateway login` links there. The file goes
// when the server stops; one a killed server left is ignored.

func listenPath(cfg config.Config) string {
	return filepath.Join(filepath.Dir(cfg.Storage.Path), config.ListenFileName)
}

// recordListen writes addr to the listen file and returns what removes
// it again (unless another server has written its own since).
func recordListen(cfg config.Config, addr string) (func(), error) {
	path := listenPath(cfg)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	line := []byte(addr + "\n")
	if err := os.WriteFile(path, line, 0o600); err != nil {
		return nil, fmt.Errorf("record the listen address: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, line) {
			_ = os.Remove(path)
		}
	}, nil
}

// servedConfig is cfg with server.listen the address a running server
// recorded, when one did and it answers there; else cfg as it is.
func servedConfig(cfg config.Config) (config.Config, error) {
	path := listenPath(cfg)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	} else if err != nil {
		return cfg, fmt.Errorf("read the running server's address: %w", err)
	}
	addr := strings.TrimSpace(string(b))
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return cfg, fmt.Errorf("%s: %q is not the host:port of a running server; delete the file", path, addr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost" // a server on every address answers on this machine's too
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
	if err != nil {
		return cfg, nil // left by a server that no longer runs
	}
	conn.Close()
	cfg.Server.Listen = addr
	return cfg, nil
}
