#!/usr/bin/env bash
# A coordinator's memory over a long run (issue "bounded state"): JOBS (default 20,000) inspection jobs
# of a 0.2 s clip, each a real worker process, through one coordinator with 2 workers and its HTTP face,
# on an SQLite queue. The coordinator's resident memory (VmRSS) is read as the 1,000th, 2,000th, 5,000th,
# 10,000th, ... job finishes. Goal: at the last job within 10% of the figure at the 1,000th.
#   bench/coordinator-memory.sh        (about 15 minutes on 2 cores)
#   JOBS=3000 bench/coordinator-memory.sh
set -euo pipefail
source "$(dirname "$0")/setup.sh" coordinator-memory
ff -f lavfi -i testsrc2=size=64x64:rate=10 -t 0.2 -c:v libx264 -preset ultrafast "$work/in.mp4"
python3 - "$bin" "$work" "${JOBS:-20000}" <<'PY'
import json, os, subprocess, sys, time
bin, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(f"{work}/manifests")
os.makedirs(f"{work}/out")
queue = f"sqlite:{work}/queue.sqlite"
paths = []
for i in range(n):
    path = f"{work}/manifests/j{i}.json"
    with open(path, "w") as f:
        json.dump({"version": 1, "name": f"j{i}", "input": f"{work}/in.mp4", "report": f"{work}/out/j{i}.json"}, f)
    paths.append(path)
start = time.perf_counter()
for k in range(0, n, 2000):
    subprocess.run([bin, "submit", "--queue", queue, "--output-root", f"{work}/out", *paths[k:k + 2000]],
                   check=True, stdout=subprocess.DEVNULL, cwd=work)
print(f"submitted {n} jobs in {time.perf_counter() - start:.1f} s")

def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

coordinator = subprocess.Popen([bin, "coordinator", "--queue", queue, "--workers", "2", "--exit-when-idle", "--json",
                                "--http", "127.0.0.1:0", "--no-auth"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=work)
marks = sorted({m for m in (1000, 2000, 5000, 10000, 15000, 20000, 50000, 100000) if m < n} | {n})
figures = {}
done = failed = 0
start = time.perf_counter()
for line in coordinator.stdout:
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("event") != "finished":
        continue
    if event.get("state") == "succeeded":
        done += 1
    else:
        failed += 1
    if done in marks and done not in figures:
        rss, peak = rss_mb(coordinator.pid)
        figures[done] = rss
        elapsed = time.perf_counter() - start
        print(f"{done:>7} jobs: RSS {rss:6.1f} MB (peak so far {peak:6.1f} MB), {elapsed:6.0f} s, {done / elapsed:5.1f} jobs/s", flush=True)
status = coordinator.wait()
if status != 0 or failed or done != n:
    sys.exit(f"the coordinator exited {status}: {done} succeeded, {failed} did not")
first, last = figures[min(figures)], figures[n]
ratio = last / first
print(f"RSS after {n} jobs / after {min(figures)}: {ratio:.3f} (goal <= 1.10){'' if ratio <= 1.10 else '  OVER THE GOAL'}")
PY
