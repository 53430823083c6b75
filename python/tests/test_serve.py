"""`python -m switchyard serve`: the proxy runs from the package (the embedded default
config: simulated providers, no keys) and answers an OpenAI-style request."""

import json
import re
import subprocess
import sys
import urllib.request


def test_serve_runs_the_proxy_from_the_package():
    proc = subprocess.Popen([sys.executable, "-m", "switchyard", "serve", "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for _ in range(50):
            line = proc.stdout.readline()
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the proxy did not say where it listens"
        body = json.dumps({"model": "default", "messages": [{"role": "user", "content": "hi"}]}).encode()
        req = urllib.request.Request(f"{url}/v1/chat/completions", data=body,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            answer = json.load(resp)
        assert answer["choices"][0]["message"]["content"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
