# The measurements of bench/console (see there). Arguments: mediafarm, a scratch folder, jobs, requests, and a
# PostgreSQL server's URL (its database is used under a schema of its own).
import http.client, json, os, random, re, sqlite3, statistics, subprocess, sys, time, urllib.parse
from benchlib import log, percentiles

bin, work, count, requests = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pg_server = sys.argv[5] if len(sys.argv) > 5 else None
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
FILL = """
    INSERT INTO jobs (id, name, manifest, base_directory, output_roots, state, priority, attempt, max_attempts, run_at,
                      created_at, started_at, finished_at, updated_at, result, errors, after_ids, waiting_for, progress, phase,
                      lease_owner, lease_token, lease_expires_at)
    SELECT i, (CASE i % 4 WHEN 0 THEN 'ingest-' WHEN 1 THEN 'export-' WHEN 2 THEN 'scan-' ELSE 'poster-' END) || i,
           replace(:manifest, 'NAME', 'clip' || i), '/srv/media', '["/srv/media/out"]',
           CASE WHEN i % 100 = 7 THEN 'failed' WHEN i % 100 = 8 THEN 'dead' WHEN i % 100 = 9 THEN 'cancelled'
                WHEN i > :count - 200 AND i % 2 = 0 THEN 'queued' WHEN i > :count - 20 THEN 'running' ELSE 'succeeded' END,
           0, 1, 3, CASE WHEN i > :count - 200 AND i % 4 = 0 THEN :now + 3600 ELSE :now - (:count - i) END,
           :now - (:count - i) * 10, :now - (:count - i) * 10 + 1, :now - (:count - i) * 10 + 13, :now - (:count - i) * 10 + 13,
           replace(:result, 'NAME', 'clip' || i), CASE WHEN i % 100 IN (7, 8) THEN replace(:errors, 'NAME', 'clip' || i) ELSE '[]' END,
           '[]', 0, CASE WHEN i > :count - 20 THEN 0.5 END, CASE WHEN i > :count - 20 THEN 'exporting' END,
           CASE WHEN i > :count - 20 THEN 'render1:100:abcd' END, CASE WHEN i > :count - 20 THEN 'token' || i END,
           CASE WHEN i > :count - 20 THEN :now + 60 END
    FROM SERIES"""
values = {"manifest": manifest, "result": result, "errors": errors, "count": count, "now": now}
db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)" + FILL.replace("SERIES", "n"), values)
db.commit()
states = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
log(f"{count} jobs in {time.perf_counter() - started:.1f} s: {states}")



def measure(queue_url, raw):
    """The pages' times through a coordinator on `queue_url` (claiming paused), and `raw`'s."""
    coordinator = subprocess.Popen([bin, "coordinator", "--queue", queue_url, "--workers", "1", "--http", "127.0.0.1:0",
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
        return elapsed

    random.seed(3)
    pages = {"first page, all": "/jobs", "first page, failed": "/jobs?state=failed", "first page, delayed": "/jobs?state=delayed",
             "first page, name filter": "/jobs?name=scan-9", "overview": "/"}
    results = {}
    for label, path in pages.items():
        get(path)  # warm
        results[label] = percentiles([get(path) for _ in range(requests)])
        log(f"{label}: p50 {results[label]['p50']:.1f} ms, p90 {results[label]['p90']:.1f} ms")
    results["an older page"] = percentiles([get(f"/jobs?before={random.randint(1000, count)}") for _ in range(requests)])
    log(f"an older page: p50 {results['an older page']['p50']:.1f} ms")
    job_page = results["a job's page"] = percentiles([get(f"/jobs/{random.randint(1, count)}") for _ in range(requests)])
    log(f"a job's page: p50 {job_page['p50']:.1f} ms, p90 {job_page['p90']:.1f} ms")
    coordinator.terminate()
    coordinator.wait(timeout=30)
    return {"serverMilliseconds": results, "rawSQLMilliseconds": {k: percentiles([f() for _ in range(requests)]) for k, f in raw.items()}}


def sql(query, arguments=()):
    started = time.perf_counter()
    db.execute(query, arguments).fetchall()
    return (time.perf_counter() - started) * 1000


log("SQLite")
summary = {"jobs": count, "states": states, "requestsPerPage": requests, "sqlite": measure("sqlite:" + queue, {
    "first page, all": lambda: sql("SELECT state, COUNT(*) FROM jobs GROUP BY state") + sql("SELECT * FROM jobs WHERE chunk_of IS NULL ORDER BY id DESC LIMIT 50"),
    "a job's page": lambda: sql("SELECT * FROM jobs WHERE id = ?", (random.randint(1, count),)),
})}

if pg_server:
    # The same jobs in a schema of their own; raw times are the server's own (EXPLAIN ANALYZE's execution time).
    schema = "console_bench"
    url = pg_server + ("&" if "?" in pg_server else "?") + "schema=" + schema
    subprocess.run([bin, "queue", "migrate", "--queue", url], check=True, capture_output=True)
    subprocess.run([bin, "queue", "pause", "--queue", url], check=True, capture_output=True)
    parsed = urllib.parse.urlparse(pg_server)
    env = dict(os.environ, PGPASSWORD=parsed.password or "")
    psql = ["psql", "-h", parsed.hostname, "-p", str(parsed.port), "-U", parsed.username, parsed.path.lstrip("/"), "-v", "ON_ERROR_STOP=1", "-Atq"]

    def quote(v):
        return str(v) if isinstance(v, (int, float)) else "'" + str(v).replace("'", "''") + "'"
    fill = FILL.replace("SERIES", "generate_series(1, :count) AS i")
    for key, value in values.items():
        fill = fill.replace(":" + key, quote(value))
    started = time.perf_counter()
    subprocess.run(psql + ["-c", f"SET search_path TO {schema}; {fill}; SELECT setval(pg_get_serial_sequence('{schema}.jobs', 'id'), {count}); ANALYZE {schema}.jobs;"],
                   check=True, env=env, capture_output=True)
    log(f"PostgreSQL: {count} jobs in {time.perf_counter() - started:.1f} s")

    def explained(query):
        out = subprocess.run(psql + ["-c", f"SET search_path TO {schema}; EXPLAIN ANALYZE {query}"], check=True, env=env,
                             capture_output=True, text=True).stdout
        return float(re.search(r"Execution Time: ([0-9.]+) ms", out).group(1))
    summary["postgres"] = measure(url, {
        "first page, all": lambda: explained("SELECT state, COUNT(*) FROM jobs GROUP BY state") + explained("SELECT * FROM jobs WHERE chunk_of IS NULL ORDER BY id DESC LIMIT 50"),
        "a job's page": lambda: explained(f"SELECT * FROM jobs WHERE id = {random.randint(1, count)}"),
    })

summary["goals"] = {"firstPageP50AtMost": 100, "jobPageP50AtMost": 50}
summary["machine"] = {"cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
print(json.dumps(summary, indent=2))
