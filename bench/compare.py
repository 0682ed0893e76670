#!/usr/bin/env python3
"""Times two commands side by side, interleaved (A B, then B A, ...) so that drift in a shared
machine's speed falls on both alike, and prints the medians and their ratio.

    bench/compare.py LABEL TARGET RUNS "OURS" "THEIRS_NAME" "THEIRS"
"""
import shlex
import statistics
import subprocess
import sys
import time


def timed(command):
    start = time.perf_counter()
    result = subprocess.run(shlex.split(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{command!r} exited {result.returncode}")
    return elapsed


label, target, runs, ours, theirs_name, theirs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
timed(ours), timed(theirs)  # warm-up: page cache, first-run costs
a, b = [], []
for i in range(runs):
    if i % 2 == 0:
        a.append(timed(ours)); b.append(timed(theirs))
    else:
        b.append(timed(theirs)); a.append(timed(ours))
ma, mb = statistics.median(a), statistics.median(b)
verdict = "met" if ma / mb <= target else "NOT met"
print(f"{label:<28} mediafarm {ma:8.3f} s   {theirs_name:<16} {mb:8.3f} s   ratio {ma / mb:.3f}  "
      f"(target <= {target}: {verdict}; medians of {runs} interleaved runs)")
