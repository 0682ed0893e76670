# The measurements of bench/pipeline (see there). Arguments: mediafarm, a scratch folder holding clip.mp4,
# a PostgreSQL URL and its port.
import json, os, re, sqlite3, subprocess, sys, time
from benchlib import events, log, percentiles

bin, work, pg_url, pg_port = sys.argv[1:5]


def rows(queue, sql):
    """Rows of a query on the queue's jobs table ({jobs} stands for it)."""
    if queue.startswith("postgres"):
        schema = re.search(r"schema=(\w+)", queue).group(1)
        out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", pg_port, "-U", "farm", "-d", "farm", "-At", "-F", " ", "-c",
                              sql.format(jobs=f"{schema}.jobs")], check=True, capture_output=True, text=True).stdout
        return [line.split() for line in out.splitlines()]
    return [[str(x) for x in r] for r in sqlite3.connect(queue.removeprefix("sqlite:")).execute(sql.format(jobs="jobs"))]


def queue_for(label, backend):
    if backend == "postgres":
        return f"{pg_url}&schema={label}"
    return "sqlite:" + os.path.join(work, f"{label}.sqlite")


def setup(label, backend):
    """A folder and an empty queue for one measurement: (folder, queue, environment)."""
    folder = os.path.join(work, label)
    os.makedirs(folder)
    queue = queue_for(label, backend)
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    if backend == "postgres":
        run(env, "queue", "migrate")
    return folder, queue, env


def manifest(folder, name):
    path = os.path.join(folder, f"{name}.json")
    json.dump({"version": 1, "name": name, "input": os.path.join(work, "clip.mp4")}, open(path, "w"))
    return path


def run(env, *args):
    return subprocess.run([bin, *args], env=env, check=True, capture_output=True, text=True).stdout


def chain(backend, length=100):
    folder, queue, env = setup(f"chain_{backend}", backend)
    path = manifest(folder, "step")
    ids = []
    for i in range(length):
        after = ["--after", f"chain-{i - 1}"] if i else []
        ids.append(json.loads(run(env, "submit", "--json", "--unique-key", f"chain-{i}", *after, path))[0]["id"])
    log_path = os.path.join(folder, "coordinator.log")
    with open(log_path, "w") as out:
        subprocess.run([bin, "coordinator", "--json", "--workers", "2", "--exit-when-idle"], env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    finished = {int(i): float(t) for i, t in rows(queue, "SELECT id, finished_at FROM {jobs}")}
    started, first = {}, {}
    for e in events(log_path):
        if e["event"] == "started":
            started.setdefault(e["job"], e["at"])
        if e["event"] == "progress":
            first.setdefault(e["job"], e["at"])
    claim, event = [], []
    for before, job in zip(ids, ids[1:]):
        claim.append((started[job] - finished[before]) * 1000)
        event.append((first[job] - finished[before]) * 1000)
    assert all(x > 0 for x in claim), "a job started before its dependency ended"
    return {"toStartedMs": percentiles(claim), "toFirstEventMs": percentiles(event)}


def pickup(backend, jobs=40):
    """Submission's commit to the worker's first event, one job at a time into an idle coordinator."""
    folder, queue, env = setup(f"pickup_{backend}", backend)
    paths = [manifest(folder, f"p{i}") for i in range(jobs)]
    run(env, "submit", "--delay", "3600", paths[0])  # makes the queue
    log_path = os.path.join(folder, "coordinator.log")
    with open(log_path, "w") as out:
        coordinator = subprocess.Popen([bin, "coordinator", "--json", "--workers", "2"], env=env, stdout=out, stderr=subprocess.STDOUT)
        time.sleep(2)
        for path in paths:
            run(env, "submit", path)
            time.sleep(0.2)
        time.sleep(1)
        coordinator.terminate()
        coordinator.wait(timeout=60)
    created = {int(i): float(t) for i, t in rows(queue, "SELECT id, created_at FROM {jobs} WHERE run_at <= created_at + 1")}
    first = {}
    for e in events(log_path):
        if e["event"] == "progress":
            first.setdefault(e["job"], e["at"])
    return percentiles([(first[j] - t) * 1000 for j, t in created.items() if j in first])


def fan_in(backend, width=500):
    folder, queue, env = setup(f"fanin_{backend}", backend)
    parts = os.path.join(folder, "parts")
    os.makedirs(parts)
    for i in range(width):
        manifest(parts, f"part{i:03d}")
    ids = [row["id"] for row in json.loads(run(env, "submit", "--json", parts))]
    join = manifest(folder, "join")
    after = []
    for i in ids:
        after += ["--after", str(i)]
    joined = json.loads(run(env, "submit", "--json", *after, join))[0]["id"]
    start = time.perf_counter()
    subprocess.run([bin, "coordinator", "--workers", "2", "--exit-when-idle"], env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    (last_part,), = rows(queue, "SELECT MAX(finished_at) FROM {jobs} WHERE id <> %d" % joined)
    (join_started, state), = rows(queue, "SELECT started_at, state FROM {jobs} WHERE id = %d" % joined)
    assert state == "succeeded"
    return {"jobs": width + 1, "seconds": round(seconds, 2), "lastPartToJoinClaimedMs": round((float(join_started) - float(last_part)) * 1000, 2)}


summary = {}
for backend in ("sqlite", "postgres"):
    log(f"{backend}: pickup")
    summary[backend] = {"pickupMs": pickup(backend)}
    log(f"{backend}: chain of 100")
    summary[backend]["handoff"] = chain(backend)
    log(f"{backend}: fan-in of 500")
    summary[backend]["fanIn"] = fan_in(backend)
print(json.dumps(summary, indent=2))
