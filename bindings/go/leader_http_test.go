package zkelect_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

type answer struct {
	Leader      bool   `json:"leader"`
	Path        string `json:"path"`
	ID          string `json:"id"`
	Token       int64  `json:"token"`
	LeaseLeftMs int64  `json:"lease_left_ms"`
}

func ask(t *testing.T, url string) (int, answer, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%s: %v in %q", url, err, raw)
	}
	return resp.StatusCode, a, resp.Header.Get("Cache-Control")
}

// LeaderHandler (issue 55) behind net/http/httptest on loopback: 200 with
// the term's token from the leader, 503 from the follower, and the two swap
// with a transfer.
func TestLeaderHandlerAnswersForTheLeaderOnly(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	sa, sb := httptest.NewServer(a.LeaderHandler()), httptest.NewServer(b.LeaderHandler())
	defer sa.Close()
	defer sb.Close()
	if status, got, cache := ask(t, sa.URL); status != 503 || got.Leader || cache != "no-store" {
		t.Fatalf("before volunteering: %d %+v %q", status, got, cache)
	}
	enroll(t, a)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	enroll(t, b)
	token, _ := a.FencingToken()
	status, got, _ := ask(t, sa.URL)
	if status != 200 || !got.Leader || got.ID != "go-a" || got.Path != path || got.Token != token || got.LeaseLeftMs <= 0 {
		t.Fatalf("leader: %d %+v (token %d)", status, got, token)
	}
	if status, _, _ := ask(t, sb.URL); status != 503 {
		t.Fatalf("follower: %d", status)
	}
	if err := a.Transfer("go-b", waitLimit); err != nil {
		t.Fatal(err)
	}
	if err := b.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	if status, got, _ := ask(t, sb.URL); status != 200 || got.ID != "go-b" || got.Token <= token {
		t.Fatalf("after the transfer, go-b: %d %+v", status, got)
	}
	if status, _, _ := ask(t, sa.URL); status != 503 {
		t.Fatalf("after the transfer, go-a: %d", status)
	}
	resp, err := http.Post(sa.URL, "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
}
