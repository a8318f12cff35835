// The Go candidate of the cross-language test (tests/bindings/test_crosslang.py),
// on the Go binding. Same request/response protocol as
// bindings/rust/zkelect/examples/candidate.rs:
//
//	candidate HOSTS PATH ID [KEY=VALUE...]   ->  READY
//	join | resign | await MS | leader? | who | events MS | counters | quit
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	zkelect "github.com/libzkelect/libzkelect/bindings/go"
)

func describe(ev zkelect.Event) string {
	switch ev.Type {
	case zkelect.Elected:
		return fmt.Sprintf("EVENT ELECTED %d", ev.Token)
	case zkelect.Deposed:
		return "EVENT DEPOSED " + ev.Reason.String()
	case zkelect.Following:
		return "EVENT FOLLOWING " + ev.ID
	case zkelect.Warning:
		return "EVENT WARNING " + ev.Message
	}
	return "EVENT " + ev.Type.String()
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: candidate HOSTS PATH ID [KEY=VALUE...]")
		os.Exit(2)
	}
	settings := map[string]string{}
	for _, kv := range os.Args[4:] {
		k, v, _ := strings.Cut(kv, "=")
		settings[k] = v
	}
	client, err := zkelect.Connect(zkelect.Options{Hosts: os.Args[1], SessionTimeout: 6 * time.Second,
		Settings: settings})
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = client.AwaitConnected(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		os.Exit(1)
	}
	e, err := client.NewElector(os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		os.Exit(1)
	}
	fmt.Println("READY")

	in := bufio.NewScanner(os.Stdin)
loop:
	for in.Scan() {
		words := strings.Fields(in.Text())
		if len(words) == 0 {
			continue
		}
		ms := 0
		if len(words) > 1 {
			ms, _ = strconv.Atoi(words[1])
		}
		wait := time.Duration(ms) * time.Millisecond
		var reply string
		switch words[0] {
		case "join":
			err = e.Volunteer()
			reply = "OK"
		case "resign":
			err = e.Resign()
			reply = "OK"
		case "await":
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			err = e.AwaitLeader(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				err, reply = nil, "TIMEOUT"
			} else if err == nil {
				var t int64
				t, err = e.FencingToken()
				reply = fmt.Sprintf("LEADER %d", t)
			}
		case "leader?":
			reply = "IS 0"
			if e.IsLeader() {
				reply = "IS 1"
			}
		case "who":
			var id string
			id, err = e.LeaderID()
			reply = "LEADS " + id
		case "events":
			var lines []string
			for ev, nerr := e.NextEvent(wait); nerr == nil; ev, nerr = e.NextEvent(0) {
				lines = append(lines, describe(ev))
			}
			reply = strings.Join(append(lines, "END"), "\n")
		case "counters":
			var m map[string]uint64
			m, err = client.Counters()
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			sort.Strings(names)
			reply = "COUNTERS"
			for _, name := range names {
				reply += fmt.Sprintf(" %s=%d", name, m[name])
			}
		case "quit":
			break loop
		default:
			reply = "ERR unknown command " + words[0]
		}
		if err != nil {
			reply = "ERR " + err.Error()
			err = nil
		}
		fmt.Println(reply)
	}
	e.Close()
	client.Close()
	fmt.Println("BYE")
}
