"""What the SDK scripts here share: a check that records a mismatch and keeps going (so one
run reports all of them), and the end of a run: exit 1 naming every failed check, or print
the line the Rust test that runs the script waits for (crates/switchyard-server/tests/e2e/).
"""

import sys

FAILURES = []


def check(ok, what):
    """Record a mismatch (and keep going, so one run reports all of them)."""
    if not ok:
        FAILURES.append(what)
        print(f"FAIL: {what}", flush=True)
    return ok


def finish(passed):
    """Exit 1 naming every failed check; else print `passed`."""
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed:", flush=True)
        for what in FAILURES:
            print(f"  - {what}", flush=True)
        sys.exit(1)
    print(passed, flush=True)
