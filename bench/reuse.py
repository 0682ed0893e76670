# The measurements of bench/reuse (see there). Arguments: mediafarm, a scratch folder holding source.mp4, the
# source's seconds, and which: all, package (the package and its reuse only), or package-s3 (the same, at prefixes of
# the S3 server MEDIAFARM_TEST_S3 names).
import hashlib, json, os, sqlite3, subprocess, sys, time
from benchlib import events, log, percentiles

bin, work = sys.argv[1], sys.argv[2]
seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
which = sys.argv[4] if len(sys.argv) > 4 else "all"
source = os.path.join(work, "source.mp4")
queue = os.path.join(work, "queue.sqlite")
env = dict(os.environ, MEDIAFARM_QUEUE="sqlite:" + queue)
os.makedirs(os.path.join(work, "out"))
objects = which == "package-s3"
if objects:
    import boto3
    endpoint, key, secret = os.environ["MEDIAFARM_TEST_S3"], os.environ["MEDIAFARM_TEST_S3_KEY"], os.environ["MEDIAFARM_TEST_S3_SECRET"]
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1")
    s3.create_bucket(Bucket="bench-out")
    env.update(MEDIAFARM_S3_ENDPOINT=endpoint, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="us-east-1",
               MEDIAFARM_SPOOL=os.path.join(work, "spool"))


LADDER = [{"height": 1080, "bitrate": 5000000}, {"height": 720, "bitrate": 3000000}, {"height": 480, "bitrate": 1200000}]


def submit(name, package=False):
    path = os.path.join(work, f"{name}.json")
    manifest = {"version": 1, "name": name, "input": source, "report": f"out/{name}.json"}
    if package:
        manifest["stream"] = {"output": f"s3://bench-out/out/{name}" if objects else f"out/{name}", "video": {"rungs": LADDER}}
    else:
        manifest["export"] = {"mode": "constantFrameRate", "frameRate": 30, "output": f"out/{name}.mp4"}
    json.dump(manifest, open(path, "w"))
    roots = ["--output-root", os.path.join(work, "out"), "--output-root", "s3://bench-out/out"] if objects else []
    out = subprocess.run([bin, "submit", "--json"] + roots + [path], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]["id"]


def job(id):
    return sqlite3.connect(queue).execute("SELECT state, created_at, finished_at, result FROM jobs WHERE id = ?", (id,)).fetchone()


def wait(id, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = job(id)
        if row[0] in ("succeeded", "failed", "dead", "cancelled"):
            assert row[0] == "succeeded", row
            return row
        time.sleep(0.01)
    raise SystemExit(f"job {id} did not end in {timeout} s")


first = submit("first") if which == "all" else None
log_path = os.path.join(work, "coordinator.log")
with open(log_path, "w") as out:
    coordinator = subprocess.Popen([bin, "coordinator", "--json", "--workers", "2"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        hits, answered, hit_ids = [], [], []
        if first is not None:
            state, created, finished, _ = wait(first, 900)
            ran = finished - created
            log(f"the export ran in {ran:.1f} s")
        for i in range(20 if first is not None else 0):
            id = submit(f"again{i}")
            state, created, finished, result = wait(id, 60)
            # Answered from the first job's result or from one answered from it (the newest is tried first).
            assert json.loads(result)["reused"]["job"] in [first] + hit_ids, result
            hit_ids.append(id)
            hits.append((finished - created) * 1000)
        # A streaming package's 3-rung ladder, then the same package asked again 10 times.
        package = submit("package", package=True)
        state, created, finished, _ = wait(package, 3600)
        packaged = finished - created
        log(f"the package was made in {packaged:.1f} s")
        package_hits, package_ids = [], []
        for i in range(10):
            id = submit(f"package{i}", package=True)
            state, created, finished, result = wait(id, 600)
            assert json.loads(result)["reused"]["job"] == package, result
            package_ids.append(id)
            package_hits.append((finished - created) * 1000)
        for e in events(log_path):
            if e["event"] == "finished" and e["job"] in hit_ids:
                answered.append(e["seconds"] * 1000)
    finally:
        coordinator.terminate()
        coordinator.wait(60)

digest = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
assert which != "all" or all(digest(os.path.join(work, "out", f"again{i}.mp4")) == digest(os.path.join(work, "out", "first.mp4")) for i in range(20))


def package_files(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs if f != ".mediafarm-package.json")


if objects:
    # Each package's objects written into a folder of the same name, as a web server would serve them.
    for name in ["package"] + [f"package{i}" for i in range(10)]:
        listed = s3.get_paginator("list_objects_v2").paginate(Bucket="bench-out", Prefix=f"out/{name}/")
        for key in (o["Key"] for page in listed for o in page.get("Contents", [])):
            path = os.path.join(work, key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            s3.download_file("bench-out", key, path)
made = package_files(os.path.join(work, "out", "package"))
assert all(package_files(os.path.join(work, "out", f"package{i}")) == made for i in range(10))
assert all(digest(os.path.join(work, "out", f"package{i}", f)) == digest(os.path.join(work, "out", "package", f)) for i in (0, 9) for f in made)
package_bytes = sum(os.path.getsize(os.path.join(work, "out", "package", f)) for f in made)
if which != "all":
    print(json.dumps({"source": f"{seconds} s 1920x1080 30 fps", "output": "s3 prefixes (moto)" if objects else "folders",
                      "package": {"ladder": "1080p 5 Mbit/s, 720p 3 Mbit/s, 480p 1.2 Mbit/s, AAC; 6 s CMAF segments, HLS and DASH",
                                  "farmSeconds": round(packaged, 2), "files": len(made), "bytes": package_bytes},
                      "packageReuseHit": {"submittedToEndedMs": percentiles(package_hits)}}, indent=2))
    sys.exit(0)

started = time.monotonic()
subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", source, "-r", "30", "-c:v", "libx264", "-preset", "veryfast", "-crf", "20",
                "-c:a", "aac", "-b:a", "128k", os.path.join(work, "ffmpeg.mp4")], check=True)
ffmpeg = time.monotonic() - started

# Hashing the input cold: what a coordinator adds once to the first job that reads it.
subprocess.run(["sync"])
open("/proc/sys/vm/drop_caches", "w").write("3\n") if os.access("/proc/sys/vm/drop_caches", os.W_OK) else None
started = time.monotonic()
digest(source)
hashed = time.monotonic() - started

summary = {
    "export": {"source": f"{seconds} s 1920x1080 30 fps", "preset": "veryfast", "farmSeconds": round(ran, 2), "ffmpegSeconds": round(ffmpeg, 2),
               "outputBytes": os.path.getsize(os.path.join(work, "out", "first.mp4"))},
    "reuseHit": {"submittedToEndedMs": percentiles(hits), "attemptMs": percentiles(answered),
                 "p50AgainstFfmpeg": round(percentiles(hits)["p50"] / 1000 / ffmpeg, 4)},
    "package": {"ladder": "1080p 5 Mbit/s, 720p 3 Mbit/s, 480p 1.2 Mbit/s, AAC; 6 s CMAF segments, HLS and DASH", "farmSeconds": round(packaged, 2),
                "files": len(made), "bytes": package_bytes},
    "packageReuseHit": {"submittedToEndedMs": percentiles(package_hits)},
    "inputHash": {"bytes": os.path.getsize(source), "coldSeconds": round(hashed, 3)},
}
print(json.dumps(summary, indent=2))
