-- wrk script: POST the chat completion body in $BENCH_BODY (a file; bench/body.json by default),
-- with the extra headers in $BENCH_HEADERS ("name: value" lines), if any.
local path = os.getenv("BENCH_BODY") or "bench/body.json"
local file = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
for name, value in (os.getenv("BENCH_HEADERS") or ""):gmatch("([^:\n]+):%s*([^\n]*)") do
  wrk.headers[name] = value
end
