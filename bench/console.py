# The measurements of bench/console (see there). Arguments: mediafarm, a scratch folder, jobs, requests.
import http.client, json, os, random, re, sqlite3, statistics, subprocess, sys, time
from benchlib import log, percentiles

bin, work, count, requests = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
queue = os.path.join(work, "queue.sqlite")
subprocess.run([bin, "queue", "migrate", "--queue", "sqlite:" + queue], check=True, capture_output=True)
subprocess.run([bin, "queue", "pause", "--queue", "sqlite:" + queue], check=True, capture_output=True)

# The jobs: one statement (a recursive count), states by the id's remainder; names of a few families.
started = time.perf_counter()
db = sqlite3.connect(queue)
now = time.time()
manifest = json.dumps({"version": 1, "name": "NAME", "input": "/srv/media/in/NAME.mov",
                       "scale": [{"start": "0", "duration": "10", "rate": "1/2"}],
                       "export": {"mode": "constantFrameRate", "frameRate": 30, "output": "/srv/media/out/NAME.mp4"},
                       "scan": {"symbologies": ["qr", "ean13"]}})
result = json.dumps({"name": "NAME", "succeeded": True, "output": "/srv/media/out/NAME.mp4", "report": "/srv/media/out/NAME.json",
                     "seconds": 12.5, "numbered": None})
errors = json.dumps([{"attempt": 1, "at": now - 500, "message": "/srv/media/in/NAME.mov: invalid data found when processing input"}])
db.execute("""
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
    INSERT INTO jobs (id, name, manifest, base_directory, output_roots, state, priority, attempt, max_attempts, run_at,
                      created_at, started_at, finished_at, updated_at, result, errors, after_ids, waiting_for, progress, phase,
                      lease_owner, lease_token, lease_expires_at)
    SELECT i, (CASE i % 4 WHEN 0 THEN 'ingest-' WHEN 1 THEN 'export-' WHEN 2 THEN 'scan-' ELSE 'poster-' END) || i,
           replace(?, 'NAME', 'clip' || i), '/srv/media', '["/srv/media/out"]',
           CASE WHEN i % 100 = 7 THEN 'failed' WHEN i % 100 = 8 THEN 'dead' WHEN i % 100 = 9 THEN 'cancelled'
                WHEN i > ? - 200 AND i % 2 = 0 THEN 'queued' WHEN i > ? - 200 AND i % 5 = 1 THEN 'waiting'
                WHEN i > ? - 20 THEN 'running' ELSE 'succeeded' END,
           0, 1, 3, CASE WHEN i > ? - 200 AND i % 4 = 0 THEN ? + 3600 ELSE ? - (? - i) END,
           ? - (? - i) * 10, ? - (? - i) * 10 + 1, ? - (? - i) * 10 + 13, ? - (? - i) * 10 + 13,
           replace(?, 'NAME', 'clip' || i), CASE WHEN i % 100 IN (7, 8) THEN replace(?, 'NAME', 'clip' || i) ELSE '[]' END,
           '[]', 0, CASE WHEN i > ? - 20 THEN 0.5 END, CASE WHEN i > ? - 20 THEN 'exporting' END,
           CASE WHEN i > ? - 20 THEN 'render1:100:abcd' END, CASE WHEN i > ? - 20 THEN 'token' || i END, CASE WHEN i > ? - 20 THEN ? + 60 END
    FROM n
    """, [count, manifest, count, count, count, count, now, now, now, now, count, now, count, now, count, now, count,
          result, errors, count, count, count, count, count, now])
db.commit()
db.execute("UPDATE jobs SET state = 'queued' WHERE state = 'waiting'")  # (no dependency rows: shown as queued)
db.commit()
states = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
log(f"{count} jobs in {time.perf_counter() - started:.1f} s: {states}")

coordinator = subprocess.Popen([bin, "coordinator", "--queue", "sqlite:" + queue, "--workers", "1", "--http", "127.0.0.1:0",
                                "--no-auth", "--api-base-dir", work], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
port = None
for line in coordinator.stdout:
    match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if match:
        port = int(match.group(1))
        break
assert port, "the coordinator did not listen"

connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)


def get(path):
    started = time.perf_counter()
    connection.request("GET", path, headers={"Accept": "text/html"})
    response = connection.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status == 200, f"{path}: {response.status} {body[:300]}"
    return elapsed, body


def sql(query, arguments=()):
    started = time.perf_counter()
    rows = db.execute(query, arguments).fetchall()
    return (time.perf_counter() - started) * 1000, rows


random.seed(3)
pages = {"first page, all": "/jobs", "first page, failed": "/jobs?state=failed", "first page, delayed": "/jobs?state=delayed",
         "first page, name filter": "/jobs?name=scan-9", "overview": "/"}
results = {}
for label, path in pages.items():
    get(path)  # warm
    times = [get(path)[0] for _ in range(requests)]
    results[label] = percentiles(times)
    log(f"{label}: p50 {results[label]['p50']:.1f} ms, p90 {results[label]['p90']:.1f} ms")
# Older pages: the page after a random job.
times = [get(f"/jobs?before={random.randint(1000, count)}")[0] for _ in range(requests)]
results["an older page"] = percentiles(times)
log(f"an older page: p50 {results['an older page']['p50']:.1f} ms")
# Job pages at random (succeeded ones and failed ones with their errors).
times = [get(f"/jobs/{random.randint(1, count)}")[0] for _ in range(requests)]
job_page = results["a job's page"] = percentiles(times)
log(f"a job's page: p50 {job_page['p50']:.1f} ms, p90 {job_page['p90']:.1f} ms")

# The same reads as raw SQL (the list's counts and first page; one job).
raw = {
    "first page, all": [sql("SELECT state, COUNT(*) FROM jobs GROUP BY state")[0]
                        + sql("SELECT * FROM jobs WHERE chunk_of IS NULL ORDER BY id DESC LIMIT 50")[0] for _ in range(requests)],
    "a job's page": [sql("SELECT * FROM jobs WHERE id = ?", (random.randint(1, count),))[0] for _ in range(requests)],
}
coordinator.terminate()
coordinator.wait(timeout=30)
summary = {
    "jobs": count, "states": states, "requestsPerPage": requests,
    "serverMilliseconds": results,
    "rawSQLMilliseconds": {k: percentiles(v) for k, v in raw.items()},
    "goals": {"firstPageP50AtMost": 100, "jobPageP50AtMost": 50},
    "machine": {"cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")},
}
print(json.dumps(summary, indent=2))
