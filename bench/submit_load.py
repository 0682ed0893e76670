# The measurements of bench/submit-load (see there). Arguments: a scratch folder holding clip.mp4, the
# rounds, then LABEL=PATH for each build of mediafarm to measure.
import http.client, json, os, re, signal, statistics, subprocess, sys, time
from benchlib import log, percentiles

work, rounds, builds = sys.argv[1], int(sys.argv[2]), [b.split("=", 1) for b in sys.argv[3:]]
SMALL_JOBS = 1000


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
        began = time.perf_counter()
        for start in range(0, SMALL_JOBS, 250):
            submitted = subprocess.run([bin, "submit", *paths[start:start + 250]], env=env, capture_output=True, text=True)
            if submitted.returncode != 0:
                raise SystemExit(f"{label}: submit exited {submitted.returncode}: {submitted.stderr[-2000:]}")
        out = os.path.join(folder, "jobs", "out")
        published = lambda: len(os.listdir(out)) if os.path.isdir(out) else 0
        loaded = post_latencies(connection, "loaded", lambda n: published() < SMALL_JOBS and time.perf_counter() - began < 900)
        seconds = time.perf_counter() - began
        if published() < SMALL_JOBS:
            raise SystemExit(f"{label}: only {published()} of {SMALL_JOBS} reports published in 900 s")
        return quiet, loaded, seconds
    finally:
        coordinator.send_signal(signal.SIGTERM)
        coordinator.wait(timeout=60)


seen = {label: {"quiet": [], "loaded": [], "seconds": []} for label, _ in builds}
for r in range(rounds):
    for label, bin in builds:
        quiet, loaded, seconds = one_run(label, bin, r)
        seen[label]["quiet"] += quiet
        seen[label]["loaded"] += loaded
        seen[label]["seconds"].append(seconds)
        log(f"round {r + 1}: {label}: quiet p99 {percentiles(quiet)['p99']} ms, under load p99 {percentiles(loaded)['p99']} ms "
            f"({len(loaded)} requests), {SMALL_JOBS} jobs in {seconds:.1f} s")
summary = {label: {"quietMs": percentiles(s["quiet"]), "whilePublishingMs": percentiles(s["loaded"]),
                   "smallJobsSeconds": [round(x, 2) for x in s["seconds"]]} for label, s in seen.items()}
summary["rounds"] = rounds
summary["machine"] = {"cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
print(json.dumps(summary, indent=2))
