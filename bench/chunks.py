# The measurements of bench/chunks (see there). Arguments: mediafarm, a scratch folder holding source.mp4,
# the chunk length in seconds.
import json, os, signal, subprocess, sys, time
from benchlib import events, log

bin, work, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])


def setup(label, chunked):
    folder = os.path.join(work, label)
    os.makedirs(os.path.join(folder, "out"))
    env = dict(os.environ, MEDIAFARM_QUEUE="sqlite:" + os.path.join(folder, "queue.sqlite"))
    export = {"mode": "constantFrameRate", "frameRate": 30, "output": "out/film.mp4", "video": {"preset": "medium"}}
    if chunked:
        export["chunkSeconds"] = chunk
    path = os.path.join(folder, "film.json")
    json.dump({"version": 1, "name": label, "input": os.path.join(work, "source.mp4"), "export": export,
               "report": "out/film.json"}, open(path, "w"))
    job = json.loads(subprocess.run([bin, "submit", "--json", path], env=env, check=True, capture_output=True, text=True).stdout)[0]["id"]
    return folder, env, job


def status(env):
    out = subprocess.run([bin, "status", "--json", "--all", "--chunks"], env=env, check=True, capture_output=True, text=True).stdout
    return {j["id"]: j for j in json.loads(out)}


def export(label, chunked, kill_at=None):
    """Runs the export through a coordinator with 2 workers until idle; kills the worker of the job that
    encodes when the export is `kill_at` done. Returns (seconds, coordinator log, kill record)."""
    folder, env, job = setup(label, chunked)
    log_path = os.path.join(folder, "coordinator.log")
    killed = None
    with open(log_path, "w") as out:
        started = time.monotonic()
        coordinator = subprocess.Popen([bin, "coordinator", "--json", "--workers", "2", "--exit-when-idle"], env=env,
                                       stdout=out, stderr=subprocess.STDOUT)
        while coordinator.poll() is None:
            time.sleep(0.5)
            if kill_at is None or killed:
                continue
            jobs = status(env)
            # The export's progress: the whole job's, or (chunked) the sum of its chunks' (95% before the join).
            progress = jobs[job].get("progress") or 0
            if chunked:
                progress /= 0.95
            if progress < kill_at:
                continue
            running = [j for j in jobs.values() if j["state"] == "running" and j.get("worker", {}).get("pid")]
            if not running:
                continue
            victim = max(running, key=lambda j: j.get("progress") or 0)
            os.kill(victim["worker"]["pid"], signal.SIGKILL)
            killed = {"job": victim["id"], "name": victim["name"], "at": time.time(), "progress": round(progress, 3)}
            log(f"{label}: killed the worker of job {victim['id']} ({victim['name']}) at {progress:.1%}")
        seconds = time.monotonic() - started
    assert coordinator.returncode == 0, open(log_path).read()[-2000:]
    return seconds, events(log_path), killed


def redone(evts, killed):
    """Seconds the killed job had been encoding when it was killed (done again by its next attempt)."""
    starts = [e["at"] for e in evts if e["event"] == "started" and e["job"] == killed["job"] and e["at"] <= killed["at"]]
    return round(killed["at"] - max(starts), 1)


log(f"whole export of {os.path.getsize(os.path.join(work, 'source.mp4')) / 1e6:.0f} MB")
whole, _, _ = export("whole", False)
log(f"whole: {whole:.1f} s")
chunked, evts, _ = export("chunked", True)
chunks = sum(1 for e in evts if e["event"] == "started" and "[chunk " in e.get("name", ""))
log(f"chunked: {chunked:.1f} s in {chunks} chunks")
killed_seconds, kill_events, killed = export("chunked-killed", True, kill_at=0.9)
lost = redone(kill_events, killed)
per_chunk = [e["seconds"] for e in evts if e["event"] == "finished" and e.get("state") == "succeeded" and "[chunk " in e.get("name", "")]
print(json.dumps({
    "export": {"wholeSeconds": round(whole, 1), "chunkedSeconds": round(chunked, 1), "ratio": round(chunked / whole, 3),
               "chunks": chunks, "chunkSeconds": chunk,
               "chunkEncodeSeconds": {"min": round(min(per_chunk), 1), "max": round(max(per_chunk), 1)}},
    "killAt90Percent": {"killed": killed, "encodingRedoneSeconds": lost, "longestChunkSeconds": round(max(per_chunk), 1),
                        "runSeconds": round(killed_seconds, 1),
                        "wholeExportWouldRedoSeconds": round(0.9 * whole, 1)},
}, indent=2))
