# The measurements of bench/farm (see there). Arguments: mediafarm, a scratch folder, the media
# folder, a PostgreSQL URL and its port, the rounds of the interleaved comparison.
import json, os, re, shutil, socket, sqlite3, statistics, subprocess, sys, time, urllib.request
from benchlib import events, log, percentiles

bin, work, media, pg_url, pg_port, rounds = sys.argv[1:7]
only = set(filter(None, (sys.argv[7] if len(sys.argv) > 7 else "").split(",")))


def wanted(part):
    return not only or part in only

rounds = int(rounds)
clip = os.path.join(media, "clip-2s.mp4")
source = os.path.join(media, "1080p-bframes-60s.mp4")


def schema_queue(name):
    return f"{pg_url}&schema={name}"


def created_times(queue):
    """Job id -> created_at (the submission's commit), for jobs that were due when submitted."""
    if queue.startswith("postgres"):
        schema = re.search(r"schema=(\w+)", queue).group(1)
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", pg_port, "-U", "farm", "-d", "farm", "-At", "-F", " ", "-c",
                              f"SELECT id, created_at FROM {schema}.jobs WHERE run_at <= created_at + 1"],
                             check=True, capture_output=True, text=True).stdout
        return {int(i): float(t) for i, t in (line.split() for line in out.splitlines())}
    return dict(sqlite3.connect(queue).execute("SELECT id, created_at FROM jobs WHERE run_at <= created_at + 1"))


def migrate(env):
    if env["MEDIAFARM_QUEUE"].startswith("postgres"):
        subprocess.run([bin, "queue", "migrate"], env=env, check=True, capture_output=True)


# 1. Pickup, hop by hop.
def pickup(label, queue):
    folder = os.path.join(work, f"pickup-{label}")
    os.makedirs(folder)
    shutil.copy(clip, os.path.join(folder, "clip.mp4"))
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    migrate(env)
    paths = []
    for i in range(40):
        path = os.path.join(folder, f"p{i}.json")
        json.dump({"version": 1, "name": f"p{i}", "input": "clip.mp4"}, open(path, "w"))
        paths.append(path)
    subprocess.run([bin, "submit", "--delay", "3600", paths[0]], env=env, check=True, capture_output=True)  # creates the queue
    log_path = os.path.join(folder, "coordinator.log")
    with open(log_path, "w") as out:
        coordinator = subprocess.Popen([bin, "coordinator", "--json", "--workers", "2"], env=env, stdout=out, stderr=subprocess.STDOUT)
        time.sleep(2)
        for path in paths:
            subprocess.run([bin, "submit", path], env=env, check=True, capture_output=True)
            time.sleep(0.2)
        time.sleep(1)
        coordinator.terminate()
        coordinator.wait(timeout=60)
    first, hops, started = {}, {}, {}
    for e in events(log_path):
        if e["event"] == "progress" and e["job"] not in first:
            first[e["job"]] = e["at"]
        if e["event"] == "started":
            hops[e["job"]] = e["hops"]
            started[e["job"]] = e["at"]
    created = created_times(queue)
    parts = {"wokeMs": [], "claimMs": [], "handMs": [], "workerMs": [], "totalMs": []}
    for job, t in created.items():
        if job not in first or job not in hops:
            continue
        h = hops[job]
        parts["wokeMs"].append(h["wait"] * 1000)
        parts["claimMs"].append(h["claim"] * 1000)
        parts["handMs"].append(h["hand"] * 1000)
        parts["workerMs"].append((first[job] - started[job]) * 1000)
        parts["totalMs"].append((first[job] - t) * 1000)
    assert len(parts["totalMs"]) == 40, f"{label}: {len(parts['totalMs'])} of 40 jobs seen"
    return {k: percentiles(v) for k, v in parts.items()}


# 2. 1,000 small inspection jobs.
def throughput():
    folder = os.path.join(work, "small")
    os.makedirs(folder)
    files = []
    for i in range(1000):
        name = f"clip{i:04d}"
        shutil.copy(clip, os.path.join(folder, name + ".mp4"))
        json.dump({"version": 1, "name": name, "input": name + ".mp4"}, open(os.path.join(folder, name + ".json"), "w"))
        files.append(os.path.join(folder, name + ".mp4"))
    listing = os.path.join(work, "small.txt")
    open(listing, "w").write("\n".join(files) + "\n")

    def timed(command, env=None):
        start = time.perf_counter()
        subprocess.run(command, shell=isinstance(command, str), check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return time.perf_counter() - start

    def farm(queue):
        env = dict(os.environ, MEDIAFARM_QUEUE=queue)
        migrate(env)
        seconds = timed([bin, "submit", folder], env) + timed([bin, "coordinator", "--workers", "2", "--exit-when-idle"], env)
        states = json.loads(subprocess.run([bin, "status", "--json", "--all", "--chunks"], env=env, check=True, capture_output=True, text=True).stdout)
        assert sum(s["state"] == "succeeded" for s in states) == 1000, "not every job succeeded"
        return seconds

    results = {k: [] for k in ("ffprobe", "mediafarmInspect", "batch", "sqlite", "postgres")}
    for r in range(rounds):
        log(f"  round {r + 1} of {rounds}")
        results["ffprobe"].append(timed(f"xargs -P 2 -n 1 ffprobe -v error -show_format -show_streams -of json < {listing}"))
        results["mediafarmInspect"].append(timed(f"xargs -P 2 -n 1 {bin} inspect --json < {listing}"))
        results["batch"].append(timed([bin, "batch", "--workers", "2", folder]))
        results["sqlite"].append(farm(os.path.join(work, f"small-{r}.sqlite")))
        results["postgres"].append(farm(schema_queue(f"small{r}")))
    median = {k: statistics.median(v) for k, v in results.items()}
    return {"jobs": 1000, "workers": 2, "rounds": rounds,
            "seconds": {k: [round(x, 2) for x in v] for k, v in results.items()},
            "medianSeconds": {k: round(v, 2) for k, v in median.items()},
            "ratioToFfprobe": {k: round(median[k] / median["ffprobe"], 3) for k in ("mediafarmInspect", "batch", "sqlite", "postgres")}}


# 3. Submit to published.
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def published():
    folder = os.path.join(work, "latency")
    os.makedirs(os.path.join(folder, "out"))
    shutil.copy(clip, os.path.join(folder, "clip.mp4"))
    queue = os.path.join(folder, "queue.sqlite")
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    port = free_port()
    log_path = os.path.join(folder, "coordinator.log")
    kinds = {
        "inspection": lambda n: {"version": 1, "name": n, "input": "clip.mp4", "report": f"out/{n}.json"},
        "passthrough 60 s 1080p": lambda n: {"version": 1, "name": n, "input": source,
                                            "export": {"mode": "passthrough", "output": f"out/{n}.mp4"}},
        "10-edit exact cut": lambda n: {"version": 1, "name": n,
                                        "edits": [{"source": source, "start": f"{6 * i + 0.7:.1f}", "duration": "3"} for i in range(10)],
                                        "export": {"mode": "passthrough", "cuts": "exact", "output": f"out/{n}.mp4"}},
    }
    samples = {"inspection": 30, "passthrough 60 s 1080p": 10, "10-edit exact cut": 10}
    warm = os.path.join(folder, "warm.json")
    json.dump(kinds["inspection"]("warm"), open(warm, "w"))
    subprocess.run([bin, "submit", "--delay", "3600", warm], env=env, cwd=folder, check=True, capture_output=True)  # creates the queue
    results = {}
    with open(log_path, "w") as out:
        coordinator = subprocess.Popen([bin, "coordinator", "--json", "--workers", "2", "--http", f"127.0.0.1:{port}", "--no-auth",
                                        "--api-base-dir", folder, "--output-root", folder, "--output-root", os.path.join(folder, "out")],
                                       env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT)
        time.sleep(2)

        def finished_at(job, deadline=120):
            end = time.time() + deadline
            while time.time() < end:
                for e in events(log_path):
                    if e["event"] == "finished" and e["job"] == job:
                        assert e["state"] == "succeeded", e
                        return e["at"]
                time.sleep(0.002)
            raise RuntimeError(f"job {job} did not finish")

        for kind, make in kinds.items():
            for via in ("cli", "api"):
                latencies = []
                for i in range(samples[kind]):
                    name = f"{kind.split()[0]}-{via}-{i}"
                    manifest = json.dumps(make(name))
                    path = os.path.join(folder, name + ".json")
                    open(path, "w").write(manifest)
                    start = time.time()
                    if via == "cli":
                        r = subprocess.run([bin, "submit", "--json", path], env=env, cwd=folder, check=True, capture_output=True, text=True)
                        job = json.loads(r.stdout)[0]["id"]
                    else:
                        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/jobs?name={name}", data=manifest.encode(), method="POST",
                                                         headers={"Content-Type": "application/json"})
                        with urllib.request.urlopen(request) as response:
                            job = json.loads(response.read())["id"]
                    latencies.append((finished_at(job) - start) * 1000)
                    time.sleep(0.1)
                results[f"{kind}, {via}"] = percentiles(latencies)
                log(f"  {kind}, {via}: p50 {results[f'{kind}, {via}']['p50']} ms")
        coordinator.terminate()
        coordinator.wait(timeout=60)
    return results


# 4. The queue's commands from the command line: each command's whole run (process start to exit), against
# the sqlite3 shell inserting one job row into the same queue, rounds interleaved.
def queue_commands(samples=30):
    folder = os.path.join(work, "commands")
    os.makedirs(folder)
    shutil.copy(clip, os.path.join(folder, "clip.mp4"))
    queue = os.path.join(folder, "queue.sqlite")
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    manifest = os.path.join(folder, "later.json")
    json.dump({"version": 1, "name": "later", "input": "clip.mp4"}, open(manifest, "w"))
    subprocess.run([bin, "submit", "--delay", "3600", manifest], env=env, cwd=folder, check=True, capture_output=True)  # creates the queue
    # sqlite3 works on its own copy of the queue: the shell deletes the write-ahead log when it exits, which
    # mediafarm keeps (so that its next opening need not make one); sharing the file would charge each
    # mediafarm command after it with remaking the log.
    baseline = os.path.join(folder, "queue-sqlite3.sqlite")
    subprocess.run(["sqlite3", queue, f".backup '{baseline}'"], check=True)
    subprocess.run([bin, "status"], env=env, cwd=folder, check=True, capture_output=True)  # the log again
    insert = ("INSERT INTO jobs (name, manifest, base_directory, state, max_attempts, run_at, created_at, updated_at) "
              f"VALUES ('row', '{{}}', '{folder}', 'queued', 3, strftime('%s','now') + 3600, strftime('%s','now'), strftime('%s','now'));")
    commands = {
        "sqlite3 INSERT one job row": ["sqlite3", baseline, insert],
        "mediafarm submit (one manifest)": [bin, "submit", "--delay", "3600", manifest],
        "mediafarm status": [bin, "status"],
        "mediafarm queue stats": [bin, "queue", "stats"],
        "mediafarm library list": [bin, "library", "list"],
        "mediafarm --version (the media program)": [bin, "--version"],
    }
    times = {k: [] for k in commands}
    for _ in range(samples):
        for k, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, env=env, cwd=folder, check=True, capture_output=True)
            times[k].append((time.perf_counter() - start) * 1000)
    median = {k: statistics.median(v) for k, v in times.items()}
    base = median["sqlite3 INSERT one job row"]
    return {"samples": samples, "medianMs": {k: round(v, 2) for k, v in median.items()},
            "ratioToSqlite3Insert": {k: round(v / base, 2) for k, v in median.items()}}


summary = {}
if wanted("pickup"):
    log("== pickup, SQLite then PostgreSQL")
    summary["pickup"] = {"sqlite": pickup("sqlite", os.path.join(work, "pickup.sqlite")), "postgres": pickup("postgres", schema_queue("pickup"))}
if wanted("small"):
    log("== 1,000 small inspection jobs")
    summary["smallJobs"] = throughput()
if wanted("published"):
    log("== submit to published (milliseconds)")
    summary["submitToPublishedMs"] = published()
if wanted("commands"):
    log("== the queue's commands, against sqlite3 (milliseconds)")
    summary["queueCommands"] = queue_commands()
print(json.dumps(summary, indent=2))
