"""The Python package's own cost and throughput (BENCHMARKS.md, "The Python binding").

Run by bench/python-binding (which makes bench/.python-venv with the package built in release
and LiteLLM pinned, and builds faultline): python bench/python_binding.py FAULTLINE_BIN

1. The binding's cost per call: a gateway over the library's scripted provider (no HTTP), N
   sync `complete` calls from Python (and N sequential `acomplete` awaits) against the Rust
   library's own loop of N `chat` calls on the same gateway (`Core.bench_library`): the
   difference per call is what the binding adds (JSON both ways, the GIL released and taken
   back, a task spawned, the answer handed across threads, the Reply built).
2. Requests per second of one Python process calling faultline (release, one thread, core 0)
   through switchyard's Gateway and through LiteLLM's Router, the same failover config: two
   OpenAI-compatible deployments `primary` then `fallback`, 2 attempts each, 30 s timeout;
   closed loop, C asyncio tasks each awaiting one completion after another for D seconds,
   the client on core 1. Scenarios: healthy (primary answers) and primary down (faultline
   answers 500 for `primary` on every call: switchyard's breaker opens, LiteLLM's deployment
   cooldown / fallbacks take over).
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import time

# LiteLLM: its bundled price map, no fetch from the network
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import switchyard  # noqa: E402
from switchyard import Gateway, OpenAIProvider, RetryPolicy  # noqa: E402
from switchyard.testing import ScriptedProvider  # noqa: E402

N_CALLS = int(os.environ.get("BENCH_CALLS", "20000"))
DURATION = float(os.environ.get("BENCH_SECONDS", "10"))
CONCURRENCY = [int(c) for c in os.environ.get("BENCH_CONCURRENCY", "1,16,64").split(",")]


def binding_cost():
    gateway = Gateway([ScriptedProvider("gpt-5.4")])
    request = switchyard.gateway._request("hello", {"max_tokens": 16})
    for _ in range(2000):  # warm up
        gateway.complete("hello", max_tokens=16)
    library = min(gateway._core.bench_library(request, N_CALLS) for _ in range(3)) / N_CALLS
    sync = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(N_CALLS):
            gateway.complete("hello", max_tokens=16)
        sync.append((time.perf_counter() - start) / N_CALLS)

    async def sequential():
        start = time.perf_counter()
        for _ in range(N_CALLS):
            await gateway.acomplete("hello", max_tokens=16)
        return (time.perf_counter() - start) / N_CALLS

    asynced = [asyncio.run(sequential()) for _ in range(3)]
    return {"library_us": library * 1e6, "sync_us": min(sync) * 1e6, "async_us": min(asynced) * 1e6}


def start_faultline(binary, scripts):
    args = ["taskset", "-c", "0", binary, "--threads", "1"]
    for s in scripts:
        args += ["--script", json.dumps(s)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    url = re.search(r"http://\S+", line).group(0)
    return proc, url.rstrip("/") + "/v1"


def switchyard_client(base):
    gateway = Gateway([OpenAIProvider("primary", base_url=base, api_key="sk-bench", timeout_s=30, max_attempts=2),
                       OpenAIProvider("fallback", base_url=base, api_key="sk-bench", timeout_s=30, max_attempts=2)],
                      retry=RetryPolicy(max_attempts=2))

    async def call():
        await gateway.acomplete("hello", max_tokens=16)
    return call


def litellm_client(base):
    import litellm
    from litellm import Router
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    router = Router(model_list=[
        {"model_name": name, "litellm_params": {"model": f"openai/{name}", "api_base": base,
                                                "api_key": "sk-bench", "timeout": 30}}
        for name in ("primary", "fallback")],
        fallbacks=[{"primary": ["fallback"]}], num_retries=1)

    async def call():
        await router.acompletion(model="primary", messages=[{"role": "user", "content": "hello"}], max_tokens=16)
    return call


async def closed_loop(call, concurrency, seconds):
    for _ in range(20):
        await call()  # warm up (connections, breaker / cooldown state)
    done = errors = 0
    stop = time.perf_counter() + seconds

    async def worker():
        nonlocal done, errors
        while time.perf_counter() < stop:
            try:
                await call()
                done += 1
            except Exception:
                errors += 1

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    return {"rps": done / wall, "cpu_us_per_req": cpu / max(done, 1) * 1e6, "errors": errors}


def throughput(binary):
    out = {}
    for scenario, scripts in (("healthy", []),
                              ("primary_down", [{"model": "primary", "then": {"kind": "status", "status": 500}}])):
        for who, make in (("switchyard", switchyard_client), ("litellm", litellm_client)):
            for c in CONCURRENCY:
                proc, base = start_faultline(binary, scripts)
                try:
                    call = make(base)
                    out[f"{scenario}/{who}/c{c}"] = asyncio.run(closed_loop(call, c, DURATION))
                    print(scenario, who, c, out[f"{scenario}/{who}/c{c}"], file=sys.stderr, flush=True)
                finally:
                    proc.kill()
                    proc.wait()
    return out


if __name__ == "__main__":
    os.sched_setaffinity(0, {1})
    from importlib.metadata import version
    result = {"switchyard": switchyard.__version__, "litellm": version("litellm"),
              "python": sys.version.split()[0], "calls": N_CALLS, "seconds": DURATION}
    result["binding"] = binding_cost()
    print(json.dumps(result["binding"]), file=sys.stderr, flush=True)
    if len(sys.argv) > 1:
        result["throughput"] = throughput(sys.argv[1])
    print(json.dumps(result, indent=1))
