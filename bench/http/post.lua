-- wrk script of bench/http/http_bench.py: POSTs one body, read from the file given as the first
-- script argument, with the Content-Type given as the second; at the end prints one line
-- "WRK {json}" with the run's counts (requests, non-2xx/3xx answers, socket errors, duration).
function init(args)
  local f = assert(io.open(args[1], "rb"))
  wrk.method = "POST"
  wrk.body = f:read("*a")
  f:close()
  wrk.headers["Content-Type"] = args[2]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"duration_us":%d,"bytes":%d,"status_errors":%d,"connect_errors":%d,' ..
    '"read_errors":%d,"write_errors":%d,"timeouts":%d,"latency_p50_us":%d,"latency_p99_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read, e.write,
    e.timeout, latency:percentile(50), latency:percentile(99)))
end
