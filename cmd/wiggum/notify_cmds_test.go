package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	extraCmds["notifyserver"] = notifyServer
}

// notifyserver MODE VAR starts a server on 127.0.0.1 for the rest of the
// script and sets $VAR to its URL. MODE is ok (answers 200), fail (always
// 500) or hang (never answers until the script ends); $VAR_HOST is its
// host:port. Each request's body
// is appended, one per line, to $WORK/VAR.log.
func notifyServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: notifyserver ok|fail|hang VAR")
	}
	mode, name := args[0], args[1]
	release := make(chan struct{})
	var mu sync.Mutex
	work := ts.Getenv("WORK") // read here: the handler runs beside the script, which sets env
	logPath := filepath.Join(work, name+".log")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(body, '\n'))
			f.Close()
		}
		// $WORK/VAR.KIND marks that a notification of that kind has
		// arrived, for a script to wait on (signalrun): the log exists
		// from the first one on.
		if _, rest, ok := strings.Cut(string(body), `"kind":"`); ok {
			if kind, _, ok := strings.Cut(rest, `"`); ok && kind != "" && !strings.ContainsAny(kind, "/.") {
				_ = os.WriteFile(filepath.Join(work, name+"."+kind), nil, 0o644)
			}
		}
		mu.Unlock()
		switch mode {
		case "fail":
			w.WriteHeader(http.StatusInternalServerError)
		case "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	switch mode {
	case "ok", "fail", "hang":
	default:
		srv.Close()
		ts.Fatalf("notifyserver: unknown mode %q", mode)
	}
	ts.Setenv(name, srv.URL)
	ts.Setenv(name+"_HOST", strings.TrimPrefix(srv.URL, "http://"))
	ts.Defer(func() {
		close(release)
		srv.Close()
	})
}
