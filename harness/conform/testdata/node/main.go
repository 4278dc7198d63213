// Command node keeps the node API but for the one rule its BREAK names, so
// that conform has a target that breaks each: n1 leads throughout with
// token 7, and writes to the resource with it as a real node does.
//
//	follower-200  a follower answers a write 200 instead of 409
//	swallow-412   the leader answers 200 to a write the resource refused
//	token-back    every third GET /leader of the leader says token 6
//	no-leader     no node ever leads
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const token = 7

func main() {
	env, err := sdk.EnvFromOS()
	if err != nil {
		log.Fatal(err)
	}
	breaks := os.Getenv("BREAK")
	leads := env.Node == "n1" && breaks != "no-leader"
	res := &contract.ResourceClient{BaseURL: env.ResourceURL, HTTP: &http.Client{Timeout: 2 * time.Second}}
	var asked atomic.Int64

	http.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("GET /leader", func(w http.ResponseWriter, _ *http.Request) {
		belief := map[string]any{"node": env.Node, "leader": leads}
		if breaks != "no-leader" {
			belief["leader_id"] = "n1"
		}
		if leads {
			t := token
			if breaks == "token-back" && asked.Add(1)%3 == 0 {
				t--
			}
			belief["token"] = t
		}
		reply(w, http.StatusOK, belief)
	})
	http.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Key, Value string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" {
			reply(w, http.StatusBadRequest, map[string]string{"error": "bad write request"})
			return
		}
		switch {
		case !leads && breaks == "follower-200":
			reply(w, http.StatusOK, map[string]any{"ok": true, "token": 0})
			return
		case !leads:
			reply(w, http.StatusConflict, map[string]string{"error": "not-leader"})
			return
		}
		ans, err := res.Write(context.Background(), contract.ResourceWrite{Key: req.Key, Value: req.Value, Token: token, Node: env.Node})
		switch {
		case errors.Is(err, contract.ErrResourceFenced) && breaks == "swallow-412":
			reply(w, http.StatusOK, map[string]any{"ok": true, "token": token})
		case errors.Is(err, contract.ErrResourceFenced):
			reply(w, http.StatusPreconditionFailed, map[string]any{"error": "fenced", "token": token, "current": ans.Current})
		case err != nil:
			reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		default:
			reply(w, http.StatusOK, map[string]any{"ok": true, "token": token, "seq": ans.Seq})
		}
	})
	log.Fatal(http.ListenAndServe(env.Addr, nil))
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
