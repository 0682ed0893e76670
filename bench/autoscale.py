# The farm on a simulated cluster (bench/autoscale): script/play-autoscaler plays KEDA and Kubernetes for
# coordinator "pods" in network namespaces on one PostgreSQL queue, each pod limited to POD_CPU cores
# (a CFS quota, as the kubelet enforces resources.limits.cpu), so that a fleet's speed grows with its pods
# as a cluster's does. From idle, a burst of 1,000 small jobs (inspections) and 20 chunked exports is
# submitted at once; the scaled fleet (the ScaledObject's behavior, its windows and periods at TIME_SCALE)
# and a fixed fleet of the scaled fleet's peak size run the same work.
#   python3 bench/autoscale.py BIN WORK   prints a JSON summary; writes WORK/autoscale.svg
import json, math, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import Hosts, events, log  # noqa: E402

bin, work = sys.argv[1], sys.argv[2]
root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
player = os.path.join(root, "script/play-autoscaler")
SMALL, EXPORTS, EXPORT_SECONDS, CHUNK = 1000, 20, 60, 30
MAX_PODS, POD_CPU, TIME_SCALE = 4, 0.5, 0.05
# The simulated period: the burst comes LEAD seconds into it; it lasts PERIOD seconds (at 1/20: 2 hours), or
# until the fleet is back at its minimum if that is later. Both fleets are measured over the same length.
LEAD, PERIOD = 30, 360


def ffmpeg(*arguments):
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error"] + list(arguments), check=True)


def media():
    ffmpeg("-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=2",
           "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", os.path.join(work, "clip.mp4"))
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=s=640x360:r=30:d={EXPORT_SECONDS}", "-f", "lavfi",
           "-i", f"sine=f=440:sample_rate=48000:d={EXPORT_SECONDS}", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30",
           "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", os.path.join(work, "long.mp4"))


def manifests(folder):
    """The burst: the small jobs with the exports spread through them, as an ingest pass hands them in."""
    os.makedirs(folder)
    every = (SMALL + EXPORTS) // EXPORTS
    for i in range(SMALL + EXPORTS):
        name = f"job{i:04d}"
        if i % every == 0:
            text = {"version": 1, "name": name, "input": "../long.mp4", "reuse": False,
                    "export": {"mode": "constantFrameRate", "frameRate": 30, "output": f"../out/{name}.mp4", "chunkSeconds": CHUNK,
                               "video": {"preset": "medium"}}}
        else:
            text = {"version": 1, "name": name, "input": "../clip.mp4", "reuse": False, "report": f"../out/{name}.json"}
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(text, f)


def ticks(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fleet(label, url, namespaces, fixed=None):
    """One run: idle, the burst, until every job succeeded, then (scaled) back to the minimum, then idle."""
    folder = os.path.join(work, label)
    os.makedirs(folder)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(["psql", url, "-qX", "-c", 'DROP SCHEMA IF EXISTS "mediafarm" CASCADE'], check=True, capture_output=True)
    subprocess.run([bin, "queue", "migrate", "--queue", url], check=True, capture_output=True)
    timeline, summary = os.path.join(folder, "timeline.jsonl"), os.path.join(folder, "summary.json")
    command = [sys.executable, player, "--connection", url, "--pods", os.path.join(folder, "pods"), "--timeline", timeline,
               "--summary", summary, "--time-scale", str(TIME_SCALE), "--max-replicas", str(MAX_PODS), "--pod-cpu", str(POD_CPU)]
    command += [f"--namespace={ns}={address}" for ns, address in namespaces]
    if fixed:
        command += ["--fixed", str(fixed)]
    # The Deployment's coordinator: 2 slots, a 30 s drain, 45 s of termination grace (the player's default).
    command += ["--", bin, "coordinator", "--workers", "2", "--host", "cluster", "--grace", "30", "--json"]
    playing = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "player.log"), "w"))
    try:
        def wait_for(what, seconds, condition):
            deadline = time.time() + seconds
            while time.time() < deadline:
                if playing.poll() is not None:
                    raise SystemExit(f"the player ended: {open(os.path.join(folder, 'player.log')).read()[-2000:]}")
                t = ticks(timeline) if os.path.exists(timeline) else []
                if t and condition(t[-1]):
                    return t[-1]
                time.sleep(0.25)
            raise SystemExit(f"{label}: no {what} in {seconds} s")
        wanted = fixed or 1
        wait_for("idle fleet", 120, lambda t: t.get("metric") == 0 and t["replicas"] == wanted and t["terminating"] == 0)
        began = time.time()
        time.sleep(LEAD)
        submitted = time.time()
        subprocess.run([bin, "submit", "--queue", url, "--output-root", out, os.path.join(work, "burst")], check=True, capture_output=True)
        while True:
            if time.time() > submitted + 3600 or playing.poll() is not None:
                raise SystemExit(f"{label}: the burst's work did not end: {open(os.path.join(folder, 'player.log')).read()[-2000:]}")
            stats = json.loads(subprocess.run([bin, "queue", "stats", "--json", "--queue", url], check=True, capture_output=True, text=True).stdout)
            counts = stats["counts"]
            if counts.get("dead", 0) or counts.get("failed", 0):
                raise SystemExit(f"{label}: jobs failed: {counts}")
            if counts.get("succeeded", 0) >= SMALL + EXPORTS and counts["succeeded"] == sum(counts.values()):
                break
            time.sleep(0.25)
        done = time.time()
        log(f"{label}: the burst's work done in {done - submitted:.1f} s")
        back = wait_for("fleet back at its minimum", 600, lambda t: t.get("metric") == 0 and t["replicas"] == wanted and t["terminating"] == 0)
        ended = max(began + PERIOD, time.time())
        time.sleep(max(0.0, ended - time.time()))
    finally:
        playing.terminate()
        playing.wait(timeout=120)
    life = json.load(open(summary))
    epoch = life["epoch"]
    back_at = epoch + back["t"]

    def pod_seconds(start, end):
        return sum(max(0.0, min(end, epoch + p["exited"]) - max(start, epoch + p["started"])) for p in life["pods"])

    # Chunks: how many started more than once, and the seconds of encoding repeated (the attempts given back).
    starts, repeated_seconds, drained_busy = {}, 0.0, 0
    for pod in life["pods"]:
        evs = events(pod["log"])
        drained = [e for e in evs if e.get("event") == "notice" and "draining" in e.get("message", "")]
        for e in evs:
            if e.get("event") == "started" and "[chunk " in e.get("name", ""):
                starts[e["job"]] = starts.get(e["job"], 0) + 1
            if e.get("event") == "finished" and "[chunk " in e.get("name", "") and e.get("state") != "succeeded":
                repeated_seconds += e.get("seconds", 0)
        # Stopped by a scale-in before the work was done, with chunks running (finished after its drain began).
        if pod["terminated"] is not None and epoch + pod["terminated"] < done and drained:
            if any(e.get("event") == "finished" and "[chunk " in e.get("name", "") and e["at"] >= drained[0]["at"] for e in evs):
                drained_busy += 1
    t = ticks(timeline)
    stopped_in_work = [p for p in life["pods"] if p["terminated"] is not None and epoch + p["terminated"] < done]
    return {
        "seconds": round(done - submitted, 2),
        "podSeconds": round(pod_seconds(submitted, done), 1),
        "podSecondsUntilBackAtMinimum": round(pod_seconds(submitted, back_at), 1),
        "periodSeconds": round(ended - began, 1),
        "podSecondsOverThePeriod": round(pod_seconds(began, ended), 1),
        "backAtMinimumSeconds": round(back_at - submitted, 2),
        "peakPods": max(x["replicas"] for x in t),
        "pods": len(life["pods"]),
        "podsStoppedDuringWork": len(stopped_in_work),
        "podsStoppedWithChunksRunning": drained_busy,
        "chunks": len(starts),
        "chunksRepeated": sum(n - 1 for n in starts.values()),
        "chunkSecondsRepeated": round(repeated_seconds, 2),
        "curve": [{"t": round(epoch + x["t"] - submitted, 2), "replicas": x["replicas"], "queued": x.get("queued"),
                   "running": x.get("running"), "terminating": x["terminating"]} for x in t],
    }


def scale_in(url, namespaces, grace, exports=8):
    """A scale-in in the middle of chunked exports: 4 pods run `exports` exports of 2 chunks each; once every
    slot has run a chunk for 10 s, the fleet is scaled to 2 (as `kubectl scale`, a lowered maxReplicaCount or
    a node's drain would stop pods: the ReplicaSet picks the 2 of lowest deletion cost) with the pods' drain
    at `grace` seconds. What the stopped pods were running, and what was done again."""
    label = f"scale-in-grace-{grace}"
    folder = os.path.join(work, label)
    jobs = os.path.join(folder, "jobs")
    os.makedirs(jobs)
    for i in range(exports):
        with open(os.path.join(jobs, f"export{i}.json"), "w") as f:
            json.dump({"version": 1, "name": f"export{i}", "input": os.path.join(work, "long.mp4"), "reuse": False,
                       "export": {"mode": "constantFrameRate", "frameRate": 30, "output": os.path.join(work, "out", f"{label}-{i}.mp4"), "chunkSeconds": 30,
                                  "video": {"preset": "medium"}}}, f)
    subprocess.run(["psql", url, "-qX", "-c", 'DROP SCHEMA IF EXISTS "mediafarm" CASCADE'], check=True, capture_output=True)
    subprocess.run([bin, "queue", "migrate", "--queue", url], check=True, capture_output=True)
    timeline, summary, replicas = (os.path.join(folder, n) for n in ("timeline.jsonl", "summary.json", "replicas"))
    command = [sys.executable, player, "--connection", url, "--pods", os.path.join(folder, "pods"), "--timeline", timeline,
               "--summary", summary, "--fixed", str(MAX_PODS), "--replicas-file", replicas, "--pod-cpu", str(POD_CPU),
               "--termination-grace", str(grace + 15)]
    command += [f"--namespace={ns}={address}" for ns, address in namespaces]
    command += ["--", bin, "coordinator", "--workers", "2", "--host", "cluster", "--grace", str(grace), "--json"]
    playing = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "player.log"), "w"))
    try:
        deadline = time.time() + 120
        while not (os.path.exists(timeline) and (t := ticks(timeline)) and t[-1].get("metric") == 0 and t[-1]["replicas"] == MAX_PODS):
            if time.time() > deadline or playing.poll() is not None:
                raise SystemExit(f"{label}: no idle fleet: {open(os.path.join(folder, 'player.log')).read()[-2000:]}")
            time.sleep(0.25)
        subprocess.run([bin, "submit", "--queue", url, "--output-root", os.path.join(work, "out"), jobs], check=True, capture_output=True)
        # Every slot running a chunk for 10 s.
        full_since, deadline = None, time.time() + 600
        while True:
            if time.time() > deadline or playing.poll() is not None:
                raise SystemExit(f"{label}: the slots never all ran chunks: {open(os.path.join(folder, 'player.log')).read()[-2000:]}")
            t = ticks(timeline)[-1]
            full = t.get("running") == MAX_PODS * 2 and t.get("queued", 0) > 0
            full_since = (full_since or time.time()) if full else None
            if full_since and time.time() - full_since >= 10:
                break
            time.sleep(0.25)
        with open(replicas, "w") as f:
            f.write("2\n")
        stopped_at = time.time()
        while True:
            if time.time() > stopped_at + 1800 or playing.poll() is not None:
                raise SystemExit(f"{label}: the exports did not end: {open(os.path.join(folder, 'player.log')).read()[-2000:]}")
            counts = json.loads(subprocess.run([bin, "queue", "stats", "--json", "--queue", url], check=True, capture_output=True, text=True).stdout)["counts"]
            if counts.get("dead", 0) or counts.get("failed", 0):
                raise SystemExit(f"{label}: jobs failed: {counts}")
            if counts.get("succeeded", 0) >= exports * 3 and counts["succeeded"] == sum(counts.values()):
                break
            time.sleep(0.25)
        done = time.time()
    finally:
        playing.terminate()
        playing.wait(timeout=300)
    life = json.load(open(summary))
    epoch = life["epoch"]
    stopped = [p for p in life["pods"] if p["terminated"] is not None and epoch + p["terminated"] < done]
    running_at_stop, finished_in_grace, given_back, given_back_seconds = 0, 0, 0, 0.0
    for pod in stopped:
        evs = events(pod["log"])
        drain = next(e["at"] for e in evs if e.get("event") == "notice" and "draining" in e.get("message", ""))
        for e in evs:
            if e.get("event") == "finished" and "[chunk " in e.get("name", "") and e["at"] >= drain:
                running_at_stop += 1
                if e.get("state") == "succeeded":
                    finished_in_grace += 1
                else:
                    given_back += 1
                    given_back_seconds += e.get("seconds", 0)
    starts = {}
    for pod in life["pods"]:
        for e in events(pod["log"]):
            if e.get("event") == "started" and "[chunk " in e.get("name", ""):
                starts[e["job"]] = starts.get(e["job"], 0) + 1
    attempts = json.loads(subprocess.run([bin, "status", "--json", "--all", "--chunks", "--queue", url], check=True, capture_output=True, text=True).stdout)
    return {"grace": grace, "podsStopped": len(stopped), "costsAtStop": [p["costAtTermination"] for p in stopped],
            "chunksRunningOnThem": running_at_stop, "finishedWithinTheGrace": finished_in_grace, "givenBack": given_back,
            "chunksRepeated": sum(n - 1 for n in starts.values()), "chunkSecondsRepeated": round(given_back_seconds, 2),
            "chunksRepeatedPerPodStopped": round(sum(n - 1 for n in starts.values()) / max(1, len(stopped)), 2),
            "attemptsAbove1": sum(1 for j in attempts if j.get("attempt", 1) > 1), "chunks": len(starts),
            "secondsAfterTheScaleIn": round(done - stopped_at, 1)}


def svg(scaled, fixed, path):
    """The replica curves and the scaled run's queue depth over time, from the runs' timelines."""
    width, height, left, right, top = 900, 420, 60, 60, 30
    curve = [c for c in scaled["curve"] if c["queued"] is not None]
    end = max(c["t"] for c in curve + fixed["curve"])
    start = min(c["t"] for c in curve)
    plot_h = height - top - 50
    depth_max = max(c["queued"] + c["running"] for c in curve) or 1
    depth_scale = math.log10(depth_max + 1)

    def x(t):
        return left + (t - start) / (end - start) * (width - left - right)

    def y_pods(n):
        return top + plot_h - n / (MAX_PODS + 0.5) * plot_h

    def y_depth(n):
        return top + plot_h - math.log10(n + 1) / depth_scale * plot_h

    def steps(points, y):
        d = []
        for i, (t, v) in enumerate(points):
            d.append(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y(v):.1f}")
            if i + 1 < len(points):
                d.append(f"L{x(points[i + 1][0]):.1f},{y(v):.1f}")
        return " ".join(d)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="18">Simulated cluster: {SMALL:,} small jobs and {EXPORTS} chunked exports from idle (t = 0: the burst submitted)</text>']
    for n in range(MAX_PODS + 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y_pods(n):.1f}" y2="{y_pods(n):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{width - right + 6}" y="{y_pods(n) + 4:.1f}">{n}</text>')
    for n in [1, 10, 100, 1000]:
        if n <= depth_max:
            parts.append(f'<text x="{left - 8}" y="{y_depth(n) + 4:.1f}" text-anchor="end" fill="#1f77b4">{n}</text>')
    tick = 30 if end - start > 120 else 10
    for s in range(int(math.ceil(start / tick)) * tick, int(end) + 1, tick):
        parts.append(f'<text x="{x(s):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{s} s</text>')
    parts.append(f'<path d="{steps([(c["t"], c["queued"] + c["running"]) for c in curve], y_depth)}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>')
    parts.append(f'<path d="{steps([(c["t"], c["running"]) for c in curve], y_depth)}" fill="none" stroke="#1f77b4" stroke-dasharray="4 3"/>')
    parts.append(f'<path d="{steps([(c["t"], c["replicas"]) for c in fixed["curve"]], y_pods)}" fill="none" stroke="#999" stroke-width="2"/>')
    parts.append(f'<path d="{steps([(c["t"], c["replicas"]) for c in curve], y_pods)}" fill="none" stroke="#d62728" stroke-width="2.5"/>')
    for t, label in [(scaled["seconds"], "scaled: work done"), (fixed["seconds"], "fixed: work done")]:
        parts.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#555" stroke-dasharray="2 2"/>')
        parts.append(f'<text x="{x(t) + 3:.1f}" y="{top + 12 + (14 if label.startswith("fixed") else 0)}" fill="#555">{label}</text>')
    legend = [("#d62728", "pods, scaled (right axis)"), ("#999", f"pods, fixed fleet of {fixed['peakPods']}"),
              ("#1f77b4", "queue depth: queued + running (left axis, log)"), ("#1f77b4", "running jobs")]
    for i, (color, text) in enumerate(legend):
        lx = left + i * 205
        dash = ' stroke-dasharray="4 3"' if text == "running jobs" else ""
        parts.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{height - 12}" y2="{height - 12}" stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{lx + 26}" y="{height - 8}">{text}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    only = os.environ.get("MEDIAFARM_BENCH_AUTOSCALE_ONLY", "")
    os.chmod(work, 0o755)
    media()
    manifests(os.path.join(work, "burst"))
    with Hosts("mfscale", MAX_PODS, work) as hosts:
        if only != "scale-in":
            scaled = fleet("scaled", hosts.url, hosts.namespaces)
            fixed = fleet("fixed", hosts.url, hosts.namespaces, fixed=scaled["peakPods"])
        scale_ins = [scale_in(hosts.url, hosts.namespaces, grace) for grace in (30, 5)] if only in ("", "scale-in") else []
    if only == "scale-in":
        print(json.dumps({"scaleIn": scale_ins}, indent=1))
        return
    svg(scaled, fixed, os.path.join(work, "autoscale.svg"))
    result = {
        "work": {"smallJobs": SMALL, "chunkedExports": EXPORTS, "exportSeconds": EXPORT_SECONDS, "chunkSeconds": CHUNK,
                 "exportPreset": "medium", "exportSize": "640x360"},
        "cluster": {"maxPods": MAX_PODS, "podCPU": POD_CPU, "slotsPerPod": 2, "timeScale": TIME_SCALE, "leadSeconds": LEAD, "periodSeconds": PERIOD,
                    "note": "the ScaledObject's behavior with its windows and periods multiplied by timeScale; the query every second"},
        "scaled": {k: v for k, v in scaled.items() if k != "curve"},
        "fixed": {k: v for k, v in fixed.items() if k != "curve"},
        "ratios": {"time": round(scaled["seconds"] / fixed["seconds"], 3),
                   "podSeconds": round(scaled["podSeconds"] / fixed["podSeconds"], 3),
                   # The scaled fleet's pod-seconds until it is back at one pod against the fixed fleet's over its work.
                   "podSecondsUntilBackAtMinimum": round(scaled["podSecondsUntilBackAtMinimum"] / fixed["podSeconds"], 3),
                   "podSecondsOverThePeriod": round(scaled["podSecondsOverThePeriod"] / fixed["podSecondsOverThePeriod"], 3)},
        "scaleIn": scale_ins,
        "goals": {"time": "<= 1.2", "podSeconds": "<= 0.6", "chunksRepeatedPerPodStopped": "<= 1"},
        "curve": scaled["curve"],
    }
    print(json.dumps(result, indent=1))


main()
