// Command remotetimeline supports bench/remote.sh: it reads the events of
// the machines of one shared run and prints each machine's timeline (its
// claims, agent runs, landings and their retries, from the run's start)
// and where the wall time went: start-up before the first agent, agents at
// work, idle between two agents, and the tail after the machine's last
// agent (its last landing).
//
//	remotetimeline T0 EVENTS...   T0: the runs' start, Unix nanoseconds;
//	                              EVENTS: one events.jsonl per machine
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

type event struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	Story    string    `json:"story"`
	Ahead    bool      `json:"ahead"`
	Rode     bool      `json:"rode"`
	ClaimMS  float64   `json:"claim_ms"`
	WaitMS   float64   `json:"wait_ms"`
	LandMS   float64   `json:"land_ms"`
	Attempts int       `json:"attempts"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: remotetimeline T0 EVENTS...")
		os.Exit(2)
	}
	ns, err := strconv.ParseInt(os.Args[1], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "remotetimeline: T0:", err)
		os.Exit(2)
	}
	t0 := time.Unix(0, ns)
	at := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	var lastAgent, lastLand, end float64
	var startup, busy, idle, tail, retries float64
	for _, path := range os.Args[2:] {
		evs, err := read(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "remotetimeline:", err)
			os.Exit(1)
		}
		name := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path))))
		fmt.Printf("%s:\n", name)
		var first, start, prevEnd, agentEnd, runEnd float64 = -1, -1, -1, -1, 0
		var mBusy, mIdle float64
		for _, e := range evs {
			t := at(e.Time)
			switch e.Event {
			case "run_start":
				fmt.Printf("  %7.3f run start\n", t)
			case "claimed":
				how := ""
				if e.Ahead {
					how = " ahead"
				}
				if e.Rode {
					how += " (in a landing push)"
				}
				fmt.Printf("  %7.3f claimed %s%s: claim %.1f ms, waited %.1f ms\n", t, e.Story, how, e.ClaimMS, e.WaitMS)
			case "iteration_start":
				if first < 0 {
					first = t
				}
				if prevEnd >= 0 {
					mIdle += t - prevEnd
				}
				start = t
				fmt.Printf("  %7.3f agent start %s\n", t, e.Story)
			case "iteration_end":
				if start >= 0 {
					mBusy += t - start
				}
				prevEnd, agentEnd = t, t
				fmt.Printf("  %7.3f agent end %s\n", t, e.Story)
			case "landed":
				retries += float64(max(e.Attempts-1, 0))
				lastLand = max(lastLand, t)
				fmt.Printf("  %7.3f landed %s: %d push(es), %.1f ms\n", t, e.Story, e.Attempts, e.LandMS)
			case "land_failed", "claim_lost":
				fmt.Printf("  %7.3f %s %s\n", t, e.Event, e.Story)
			case "run_end":
				runEnd = t
				fmt.Printf("  %7.3f run end\n", t)
			}
		}
		if first >= 0 {
			startup += first
			tail += runEnd - agentEnd
			lastAgent = max(lastAgent, agentEnd)
		}
		busy += mBusy
		idle += mIdle
		end = max(end, runEnd)
		fmt.Printf("  start-up %.3f s, agents %.3f s, idle between agents %.3f s, after the last agent %.3f s\n", first, mBusy, mIdle, runEnd-agentEnd)
	}
	n := float64(len(os.Args) - 2)
	fmt.Printf("per machine (mean): start-up %.3f s, agents %.3f s, idle %.3f s, tail %.3f s; landing retries %.0f in all; last agent end %.3f s, last landing %.3f s, last run end %.3f s\n",
		startup/n, busy/n, idle/n, tail/n, retries, lastAgent, lastLand, end)
}

func read(path string) ([]event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil && !e.Time.IsZero() {
			evs = append(evs, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
	return evs, nil
}
