package zkelect

import (
	"io"
	"net/http"
	"strings"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

const notLeading = `{"leader":false}`

// LeaderAnswer is the leader endpoint's answer, as `zkelect run`'s GET
// /leader gives it (zkelect_leader_answer): 200 and a JSON object with the
// path, id, fencing token and lease time left while this candidacy leads,
// else 503 and {"leader":false} (also once closed). One reading decides: a
// 200 never comes after IsLeader would say false.
func (e *Elector) LeaderAnswer() (status int, body string) {
	body = notLeading
	_ = e.use(func(h capi.NativeElection) error {
		if s := capi.Leader_answer(h); s != "" {
			body = s
		}
		return nil
	})
	// The first key tells the status: the text is one reading.
	if strings.HasPrefix(body, `{"leader":true`) {
		return http.StatusOK, body
	}
	return http.StatusServiceUnavailable, body
}

// LeaderHandler answers GET and HEAD with LeaderAnswer, never cached: mount
// it in a server of your own for a load balancer's health check or a
// Kubernetes readiness probe, e.g. http.Handle("/leader", e.LeaderHandler()).
func (e *Elector) LeaderHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		status, body := e.LeaderAnswer()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = io.WriteString(w, body+"\n")
		}
	})
}
