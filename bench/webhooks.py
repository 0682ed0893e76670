# bench/webhooks's measurements (see that script). Arguments: BIN_DIR WORK_FOLDER POSTGRES_URL.
import json, os, statistics, subprocess, sys, time
from benchlib import event, log, percentiles

bins, work, pg_url = sys.argv[1:4]
mediafarm = os.path.join(bins, "mediafarm")
receiver_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "script", "webhook-receiver")
secret = os.path.join(work, "webhook.secret")
with open(secret, "w") as f:
    f.write(subprocess.run([mediafarm, "webhooks", "new-secret"], check=True, capture_output=True, text=True).stdout)


def queue_bench(target, webhook):
    args = [os.path.join(bins, "mediafarm-queue-bench"), target, "2000", "claimloop"] + (["webhook"] if webhook else [])
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)["claimCompletePerSecond"]


def start_receiver(name):
    port_file = os.path.join(work, name + ".port")
    log_file = os.path.join(work, name + ".jsonl")
    process = subprocess.Popen(["/usr/bin/python3", receiver_script, "--secret-file", secret, "--log", log_file,
                                "--port-file", port_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    return process, int(open(port_file).read()), log_file


def accepted(log_file):
    rows = []
    if os.path.exists(log_file):
        with open(log_file) as f:
            for line in f:
                row = json.loads(line)
                if not row.get("verified"):
                    raise SystemExit(f"a signature did not verify: {row}")
                if row.get("answered") == 204:
                    rows.append(row)
    return rows


def iso_seconds(text):
    # 2026-11-25T23:01:04.512Z
    from datetime import datetime, timezone
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def manifest(folder, name):
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"version": 1, "name": name, "input": "clip.mp4", "report": f"out/{name}.json"}, f)
    return path


def latency(label, queue):
    folder = os.path.join(work, "latency-" + label)
    os.makedirs(folder)
    os.symlink(os.path.join(work, "clip.mp4"), os.path.join(folder, "clip.mp4"))
    for i in range(200):
        manifest(folder, f"job{i:03d}")
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    if queue.startswith("postgres"):
        subprocess.run([mediafarm, "queue", "migrate"], env=env, check=True, capture_output=True)
    subprocess.run([mediafarm, "submit", folder], env=env, check=True, capture_output=True)
    receiver, port, log_file = start_receiver("latency-" + label)
    coordinator = subprocess.Popen([mediafarm, "coordinator", "--workers", "2", "--webhook", f"http://127.0.0.1:{port}/farm",
                                    "--webhook-secret-file", secret], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and len(accepted(log_file)) < 200:
        time.sleep(0.2)
    coordinator.terminate(); coordinator.wait(timeout=60); receiver.kill()
    rows = accepted(log_file)
    assert len(rows) == 200, f"{label}: {len(rows)} of 200 events arrived"
    return percentiles([(r["receivedAt"] - iso_seconds(r["timestamp"])) * 1000 for r in rows])


def farm_seconds(label, queue, webhook, round_, jobs=600):
    """Inspection jobs with 2 workers, with or without an endpoint (and a sender) in the queue: from the
    first job's start to the last one's end, by the coordinator's own events."""
    folder = os.path.join(work, f"farm-{label}-{webhook}-{round_}")
    os.makedirs(folder)
    os.symlink(os.path.join(work, "clip.mp4"), os.path.join(folder, "clip.mp4"))
    for i in range(jobs):
        manifest(folder, f"job{i:03d}")
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    if queue.startswith("postgres"):
        subprocess.run([mediafarm, "queue", "migrate"], env=env, check=True, capture_output=True)
    subprocess.run([mediafarm, "submit", folder], env=env, check=True, capture_output=True)
    extra, receiver = [], None
    if webhook:
        receiver, port, log_file = start_receiver(f"farm-{label}-{round_}")
        extra = ["--webhook", f"http://127.0.0.1:{port}/farm", "--webhook-secret-file", secret]
    out = subprocess.run([mediafarm, "coordinator", "--json", "--workers", "2", "--exit-when-idle"] + extra, env=env,
                         check=True, capture_output=True, text=True).stdout
    if receiver:
        receiver.kill()
    events = [e for e in map(event, out.splitlines()) if e is not None]
    started = [e["at"] for e in events if e.get("event") == "started"]
    finished = [e["at"] for e in events if e.get("event") == "finished"]
    assert len(finished) == jobs, f"{label}: {len(finished)} of {jobs} jobs finished"
    return max(finished) - min(started)


def throughput(label, queue, events=2000):
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    if queue.startswith("postgres"):
        subprocess.run([mediafarm, "queue", "migrate"], env=env, check=True, capture_output=True)
    receiver, port, log_file = start_receiver("throughput-" + label)
    hook = f"http://127.0.0.1:{port}/farm"
    # A coordinator adds the endpoint and exits (nothing to do); no one sends while the events are recorded.
    subprocess.run([mediafarm, "coordinator", "--exit-when-idle", "--webhook", hook], env=env, check=True, capture_output=True)
    folder = os.path.join(work, "throughput-" + label)
    os.makedirs(folder)
    for i in range(events):
        manifest(folder, f"job{i:04d}")
    out = subprocess.run([mediafarm, "submit", "--json", "--allow-missing-inputs", "--delay", "3600", folder], env=env,
                         check=True, capture_output=True, text=True).stdout
    ids = [str(row["id"]) for row in json.loads(out)]
    for start in range(0, len(ids), 500):
        subprocess.run([mediafarm, "cancel"] + ids[start:start + 500], env=env, check=True, capture_output=True)
    start = time.time()
    coordinator = subprocess.Popen([mediafarm, "coordinator", "--webhook-secret-file", secret], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline and len(accepted(log_file)) < events:
        time.sleep(0.1)
    coordinator.terminate(); coordinator.wait(timeout=60); receiver.kill()
    rows = accepted(log_file)
    assert len(rows) == events, f"{label}: {len(rows)} of {events} events arrived"
    arrivals = sorted(r["receivedAt"] for r in rows)
    return {"events": events, "secondsFromStart": round(arrivals[-1] - start, 2),
            "eventsPerSecond": round(events / (arrivals[-1] - start)),
            "eventsPerSecondFirstToLast": round((events - 1) / (arrivals[-1] - arrivals[0]))}


summary = {}
for backend, target, queue in (("sqlite", "sqlite:" + os.path.join(work, "store"), os.path.join(work, "q.sqlite")),
                                ("postgres", pg_url, pg_url)):
    os.makedirs(os.path.join(work, "store"), exist_ok=True)
    log(f"== {backend}: claim+complete with and without an endpoint, 3 rounds")
    without, with_ = [], []
    for _ in range(3):
        without.append(queue_bench(target, False))
        with_.append(queue_bench(target, True))
    cost = 1 - statistics.median(with_) / statistics.median(without)
    log(f"== {backend}: delivery latency of 200 jobs' events")
    lat = latency(backend, queue if backend == "sqlite" else pg_url + "&schema=webhook_latency")
    log(f"== {backend}: 600 inspection jobs, without and with an endpoint, 2 rounds")
    farm = {False: [], True: []}
    for round_ in range(2):
        for webhook in (False, True):
            q = (os.path.join(work, f"farm-{round_}-{webhook}.sqlite") if backend == "sqlite"
                 else pg_url + f"&schema=webhook_farm_{round_}_{int(webhook)}")
            farm[webhook].append(farm_seconds(backend, q, webhook, round_))
    log(f"== {backend}: 2000 recorded events sent")
    thr = throughput(backend, os.path.join(work, "t.sqlite") if backend == "sqlite" else pg_url + "&schema=webhook_throughput")
    summary[backend] = {
        "claimCompletePerSecond": {"withoutEndpoint": [round(x) for x in without], "withEndpoint": [round(x) for x in with_],
                                   "outboxCostShare": round(cost, 3)},
        "deliveryLatencyMs": lat,
        "inspectionJobs600Seconds": {"withoutEndpoint": [round(x, 2) for x in farm[False]], "withEndpoint": [round(x, 2) for x in farm[True]],
                                     "costShare": round(statistics.median(farm[True]) / statistics.median(farm[False]) - 1, 3)},
        "throughput": thr,
    }
print(json.dumps(summary, indent=2))
