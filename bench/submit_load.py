# The measurements of bench/submit-load (see there). Arguments: a scratch folder holding clip.mp4, the
# rounds, then LABEL=PATH for each build of mediafarm to measure.
import http.client, json, os, re, signal, sqlite3, statistics, subprocess, sys, time
from benchlib import log, percentiles

work, rounds, builds = sys.argv[1], int(sys.argv[2]), [b.split("=", 1) for b in sys.argv[3:]]
SMALL_JOBS = 1000
# Chunked exports beside them (long.mp4: 12 s, keyframes every 2 s; chunks of 2 s, so 6 chunk jobs and a
# join each): their chunks are published, then their chunk folders removed by the rescuer.
CHUNKED_JOBS = 20


def post_latencies(connection, tag, keep_going):
    """POSTs delayed jobs every 10 ms while keep_going() holds; each answer's milliseconds."""
    seen, n = [], 0
    while keep_going(n):
        body = json.dumps({"version": 1, "name": f"{tag}-{n}", "input": "clip.mp4"})
        t = time.perf_counter()
        connection.request("POST", "/api/jobs?delay=86400", body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        seen.append((time.perf_counter() - t) * 1000)
        if answer.status != 201:
            raise SystemExit(f"POST /api/jobs answered {answer.status}")
        n += 1
        time.sleep(0.01)
    return seen


def one_run(label, bin, round):
    folder = os.path.join(work, f"{label}-{round}")
    os.makedirs(os.path.join(folder, "jobs"))
    os.link(os.path.join(work, "clip.mp4"), os.path.join(folder, "clip.mp4"))
    os.link(os.path.join(work, "long.mp4"), os.path.join(folder, "long.mp4"))
    queue = os.path.join(folder, "queue.sqlite")
    env = dict(os.environ, MEDIAFARM_QUEUE=f"sqlite:{queue}")
    logfile = open(os.path.join(folder, "coordinator.log"), "w")
    coordinator = subprocess.Popen([bin, "coordinator", "--workers", "2", "--http", "127.0.0.1:0", "--no-auth",
                                    "--api-base-dir", folder], env=env, stdout=logfile, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            text = open(logfile.name).read()
            if m := re.search(r"listening on ([0-9.]+):(\d+)", text):
                break
            time.sleep(0.05)
        else:
            raise SystemExit(f"{label}: the coordinator did not listen:\n{text}")
        connection = http.client.HTTPConnection(m.group(1), int(m.group(2)))
        post_latencies(connection, "warm", lambda n: n < 20)
        quiet = post_latencies(connection, "quiet", lambda n: n < 200)
        paths = []
        for i in range(SMALL_JOBS):
            path = os.path.join(folder, "jobs", f"j{i:04d}.json")
            json.dump({"version": 1, "name": f"small-{i}", "input": "../clip.mp4", "reuse": False,
                       "report": f"out/r{i:04d}.json"}, open(path, "w"))
            paths.append(path)
        for i in range(CHUNKED_JOBS):
            path = os.path.join(folder, "jobs", f"c{i:02d}.json")
            json.dump({"version": 1, "name": f"chunked-{i}", "input": "../long.mp4", "reuse": False,
                       "export": {"mode": "constantFrameRate", "frameRate": 30, "output": f"out/c{i:02d}.mp4", "chunkSeconds": 2,
                                  "video": {"preset": "ultrafast"}}}, open(path, "w"))
            paths.append(path)
        began = time.perf_counter()
        for start in range(0, len(paths), 250):
            submitted = subprocess.run([bin, "submit", *paths[start:start + 250]], env=env, capture_output=True, text=True)
            if submitted.returncode != 0:
                raise SystemExit(f"{label}: submit exited {submitted.returncode}: {submitted.stderr[-2000:]}")
        out = os.path.join(folder, "jobs", "out")
        # Published: every report and every joined export; cleaned: no chunk folder left beside them.
        entries = lambda: os.listdir(out) if os.path.isdir(out) else []
        published = lambda: sum(1 for e in entries() if not e.startswith("."))
        chunk_folders = lambda: sum(1 for e in entries() if ".chunks-" in e)
        done = lambda: published() >= SMALL_JOBS + CHUNKED_JOBS and chunk_folders() == 0
        loaded = post_latencies(connection, "loaded", lambda n: not done() and time.perf_counter() - began < 900)
        seconds = time.perf_counter() - began
        if not done():
            raise SystemExit(f"{label}: {published()} of {SMALL_JOBS + CHUNKED_JOBS} outputs published, {chunk_folders()} chunk folders left, in 900 s")
        # What the load was: the chunk jobs the exports were split into (each export joined them).
        with sqlite3.connect(queue) as db:
            chunks = db.execute("SELECT COUNT(*) FROM jobs WHERE chunk_of IS NOT NULL AND state = 'succeeded'").fetchone()[0]
        if chunks < CHUNKED_JOBS * 2:
            raise SystemExit(f"{label}: the exports were split into {chunks} chunk jobs only")
        return quiet, loaded, seconds, chunks
    finally:
        coordinator.send_signal(signal.SIGTERM)
        coordinator.wait(timeout=60)


seen = {label: {"quiet": [], "loaded": [], "seconds": [], "chunks": []} for label, _ in builds}
for r in range(rounds):
    for label, bin in builds:
        quiet, loaded, seconds, chunks = one_run(label, bin, r)
        seen[label]["chunks"].append(chunks)
        seen[label]["quiet"] += quiet
        seen[label]["loaded"] += loaded
        seen[label]["seconds"].append(seconds)
        log(f"round {r + 1}: {label}: quiet p99 {percentiles(quiet)['p99']} ms, under load p99 {percentiles(loaded)['p99']} ms "
            f"({len(loaded)} requests), {SMALL_JOBS} small jobs and {CHUNKED_JOBS} chunked exports ({chunks} chunk jobs) in {seconds:.1f} s")
summary = {label: {"quietMs": percentiles(s["quiet"]), "whilePublishingMs": percentiles(s["loaded"]),
                   "jobsSeconds": [round(x, 2) for x in s["seconds"]], "chunkJobs": s["chunks"]} for label, s in seen.items()}
summary["load"] = {"smallJobs": SMALL_JOBS, "chunkedExports": CHUNKED_JOBS}
summary["rounds"] = rounds
summary["machine"] = {"cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
print(json.dumps(summary, indent=2))
