package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPolicySimulate_CLI: `gateway policy simulate` sends the window, the
// rules (a target may hold colons), the removals and the levels to POST
// /v1/policy/simulate with the admin token, and prints the answer.
func TestPolicySimulate_CLI(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/policy/simulate" || r.Header.Get("Authorization") != "Bearer adm" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		_, _ = w.Write([]byte(`{"total":3,"changed":[],"counts":{}}`))
	}))
	defer srv.Close()
	getenv := func(k string) string {
		return map[string]string{"GATEWAY_URL": srv.URL, "GATEWAY_TOKEN": "adm", "HOME": t.TempDir()}[k]
	}
	r := runCLI(context.Background(), getenv, "", "policy", "simulate", "--since", "3d",
		"--add-rule", "code:exec:npm test*:approve", "--add-rule", "network:http:https://a.example:8443/x:block",
		"--remove-rule", "api:3", "--level", "a1=Full")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"total":3,"changed":[],"counts":{}}` {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
	b, _ := json.Marshal(got)
	want := `{"add_rules":[{"action":"approve","capability":"code:exec","target":"npm test*"},` +
		`{"action":"block","capability":"network:http","target":"https://a.example:8443/x"}],` +
		`"levels":{"a1":"Full"},"remove_rules":["api:3"],"since":"3d"}`
	if string(b) != want {
		t.Fatalf("sent %s\nwant %s", b, want)
	}
	if r := runCLI(context.Background(), getenv, "", "policy", "simulate", "--add-rule", "nonsense"); r.code != 2 {
		t.Errorf("a bad --add-rule: exit %d", r.code)
	}
}

// TestPolicySuggest_CLI: `gateway policy suggest` asks the gateway with the
// window and the minimum and prints one JSON line per suggestion.
func TestPolicySuggest_CLI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/policy/suggestions" || r.URL.Query().Get("since") != "2d" || r.URL.Query().Get("min") != "5" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{"suggestions":[{"target":"a"},{"target":"b"}]}`))
	}))
	defer srv.Close()
	getenv := func(k string) string {
		return map[string]string{"GATEWAY_URL": srv.URL, "GATEWAY_TOKEN": "adm", "HOME": t.TempDir()}[k]
	}
	r := runCLI(context.Background(), getenv, "", "policy", "suggest", "--since", "2d", "--min", "5")
	if r.code != 0 || r.stdout != "{\"target\":\"a\"}\n{\"target\":\"b\"}\n" {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
}
