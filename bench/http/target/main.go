// http-target: the HTTP server bench/http/http_bench.py sends to (HttpSink, Benthos, wrk) and the
// plain-server limit of the webhook runs. Standard library only.
//
//	http-target -listen 127.0.0.1:PORT
//
// Every POST/PUT (any path but /stats) has its body read in full and counted: a body whose
// Content-Type names ndjson/jsonl counts one record per non-empty line, any other body one
// record. The answer is 200 {"accepted":n} (what ferry's webhook answers). GET /stats answers
// {"requests","records","bytes"} since the start, for the bench to time runs by what arrived.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

var (
	requests atomic.Int64
	records  atomic.Int64
	received atomic.Int64
	buffers  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// lines counts the non-empty lines of an NDJSON body.
func lines(b []byte) int64 {
	var n int64
	start := 0
	for {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			if len(bytes.TrimSpace(b[start:])) > 0 {
				n++
			}
			return n
		}
		if i > 0 && len(bytes.TrimSpace(b[start:start+i])) > 0 {
			n++
		}
		start += i + 1
	}
}

func handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/stats" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"requests":%d,"records":%d,"bytes":%d}`, requests.Load(), records.Load(), received.Load())
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		http.Error(w, "POST or PUT", http.StatusMethodNotAllowed)
		return
	}
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer buffers.Put(buf)
	if _, err := io.Copy(buf, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var n int64 = 1
	ct := r.Header.Get("Content-Type")
	if strings.Contains(ct, "ndjson") || strings.Contains(ct, "jsonl") {
		n = lines(buf.Bytes())
	}
	requests.Add(1)
	records.Add(n)
	received.Add(int64(buf.Len()))
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"accepted":` + strconv.FormatInt(n, 10) + `}`))
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "host:port to listen on")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*listen, http.HandlerFunc(handle)))
}
