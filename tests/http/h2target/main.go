// h2target: an HTTPS server for tests/http/test_http_h2.py that speaks HTTP/2 (ALPN h2) and
// HTTP/1.1 and says which one each request came over. Standard library only.
//
//	h2target -listen 127.0.0.1:PORT -cert server.crt -key server.key -out DIR [-http1]
//
// -http1 offers HTTP/1.1 only (no h2 in ALPN). Every POST/PUT (any path but /_stats) is answered
// 200 once its body is appended to DIR/<first path segment>.txt, one line per non-empty line of
// the body. GET /_stats answers, per first path segment, {"requests", "records", "proto":
// {"1": n, "2": n} (r.ProtoMajor of each request), "conns": distinct connections that carried
// its requests}, and "conns_opened": connections accepted in all (http.Server.ConnState
// StateNew).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

type pathStats struct {
	Requests int64            `json:"requests"`
	Records  int64            `json:"records"`
	Proto    map[string]int64 `json:"proto"`
	Conns    int              `json:"conns"`
	conns    map[int64]bool
}

type connKey struct{}

var (
	outDir      string
	connsOpened atomic.Int64
	nextConn    atomic.Int64
	mu          sync.Mutex
	paths       = map[string]*pathStats{}
)

func segment(p string) string {
	p = strings.Trim(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	if p == "" || p == "." || p == ".." {
		return "root"
	}
	return p
}

func handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_stats" && r.Method == http.MethodGet {
		mu.Lock()
		out := map[string]any{"conns_opened": connsOpened.Load()}
		byPath := map[string]*pathStats{}
		for k, v := range paths {
			c := *v
			c.Conns = len(v.conns)
			byPath[k] = &c
		}
		out["paths"] = byPath
		body, _ := json.Marshal(out)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		http.Error(w, "POST or PUT", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var lines [][]byte
	for _, l := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	conn, _ := r.Context().Value(connKey{}).(int64)
	name := segment(r.URL.Path)
	mu.Lock()
	s := paths[name]
	if s == nil {
		s = &pathStats{Proto: map[string]int64{}, conns: map[int64]bool{}}
		paths[name] = s
	}
	s.Requests++
	s.Records += int64(len(lines))
	s.Proto[strconv.Itoa(r.ProtoMajor)]++
	s.conns[conn] = true
	f, err := os.OpenFile(filepath.Join(outDir, name+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		for _, l := range lines {
			f.Write(append(l, '\n'))
		}
		err = f.Close()
	}
	mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"accepted":` + strconv.Itoa(len(lines)) + `}`))
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "host:port")
	cert := flag.String("cert", "", "PEM certificate chain")
	key := flag.String("key", "", "PEM key")
	http1 := flag.Bool("http1", false, "offer HTTP/1.1 only")
	flag.StringVar(&outDir, "out", ".", "folder of the received records")
	flag.Parse()
	srv := &http.Server{
		Handler: http.HandlerFunc(handle),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				connsOpened.Add(1)
			}
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, nextConn.Add(1))
		},
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if *http1 {
		// A non-nil empty map: no h2 in ALPN.
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s (http1 only: %v)", ln.Addr(), *http1)
	log.Fatal(srv.ServeTLS(ln, *cert, *key))
}
