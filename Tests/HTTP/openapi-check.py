#!/usr/bin/env python3
"""Exercises every operation of docs/openapi.json against a running coordinator and checks each answer:
its status is one the document declares for that operation, and a JSON body validates against the
declared schema (JSON Schema 2020-12, as OpenAPI 3.1 uses). Fails if an operation was not exercised.

usage: openapi-check.py SPEC BASE_URL MANIFEST [TOKEN]
MANIFEST is a valid manifest for the coordinator's --api-base-dir (queued with a long delay, so it stays
queued while the script cancels and retries it)."""
import json, os, re, socket, sys, threading, time, urllib.error, urllib.parse, urllib.request
import jsonschema

spec_path, base, manifest_path = sys.argv[1:4]
token = sys.argv[4] if len(sys.argv) > 4 else None
spec = json.load(open(spec_path))
manifest = open(manifest_path, "rb").read()
exercised, failures = set(), []


def operation(method, path):
    """The spec's path template matching `path`, and its operation object."""
    for template, item in spec["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", r"[^/]+", template) + "$"
        if re.match(pattern, path) and method.lower() in item:
            return template, item[method.lower()]
    return None, None


def resolve(obj):
    while "$ref" in obj:
        node = spec
        for part in obj["$ref"][2:].split("/"):
            node = node[part]
        obj = node
    return obj


def request(method, path, body=None, headers=None, auth=True):
    headers = dict(headers or {})
    if token and auth:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(base + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, ctype, data = r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        status, ctype, data = e.code, e.headers.get("Content-Type", ""), e.read()
    check(method, path.split("?")[0], status, ctype, data)
    return status, (json.loads(data) if ctype.startswith("application/json") else data.decode())


def check(method, path, status, ctype, data):
    template, op = operation(method, path)
    if op is None:
        failures.append(f"{method} {path}: not in the document")
        return
    exercised.add((method, template))
    declared = op["responses"].get(str(status))
    if declared is None:
        failures.append(f"{method} {path}: status {status} is not declared ({sorted(op['responses'])})")
        return
    content = resolve(declared).get("content", {})
    media = ctype.split(";")[0].strip()
    if content and media not in content:
        failures.append(f"{method} {path} {status}: Content-Type {media}, declared {sorted(content)}")
        return
    schema = content.get(media, {}).get("schema")
    if media == "application/json" and schema is not None:
        document = dict(schema, components=spec["components"])
        errors = list(jsonschema.Draft202012Validator(document).iter_errors(json.loads(data)))
        for e in errors:
            failures.append(f"{method} {path} {status}: {'/'.join(map(str, e.absolute_path))}: {e.message}")


def expect(condition, message):
    if not condition:
        failures.append(message)


def events_reader(seen, ready):
    """Reads /api/events over a raw socket and records the event names with their data."""
    host, port = base.split("//")[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=20)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    s.sendall(f"GET /api/events HTTP/1.1\r\nHost: {host}\r\n{auth}Accept: text/event-stream\r\n\r\n".encode())
    buffer, offset = b"", 0
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return
            buffer += chunk
            if b"\r\n\r\n" in buffer and not ready.is_set():
                head = buffer.split(b"\r\n\r\n")[0].decode()
                seen.append(("head", head))
                ready.set()
            while True:
                m = re.compile(rb"event: (\w+)\ndata: (\{[^\n]*\})\n\n").search(buffer, offset)
                if not m:
                    break
                seen.append((m.group(1).decode(), json.loads(m.group(2))))
                offset = m.end()
    except socket.timeout:
        return
    finally:
        s.close()


status, body = request("GET", "/healthz")
expect(status == 200 and body["status"] == "ok", f"healthz: {status} {body}")
status, body = request("GET", "/readyz")
expect(status == 200 and body["status"] == "ready", f"readyz: {status} {body}")
status, body = request("GET", "/metrics")
expect(status == 200 and "mediafarm_jobs{state=\"queued\"}" in body, f"metrics: {status}")
status, body = request("GET", "/")
expect(status == 200 and "<h1>MediaFarm</h1>" in body, f"status page: {status}")

seen, ready = [], threading.Event()
reader = threading.Thread(target=events_reader, args=(seen, ready), daemon=True)
reader.start()
expect(ready.wait(10), "events: no answer")
exercised.add(("GET", "/api/events"))
head = dict(seen).get("head", "")
expect(head.startswith("HTTP/1.1 200") and "text/event-stream" in head, f"events: {head!r}")

status, body = request("POST", "/api/jobs", b'{"version": 1, "inptu": "x.mp4"}')
expect(status == 422 and any(i["path"] == "$.inptu" for i in body.get("issues", [])), f"invalid manifest: {status} {body}")
status, body = request("POST", "/api/jobs", b'{"version": 1, "input": "clip.mp4", "report": "../outside.json"}')
expect(status == 422 and any(i["path"] == "$.report" and "outside the output roots" in i["message"] for i in body.get("issues", [])),
       f"output outside the roots: {status} {body}")
status, body = request("POST", "/api/jobs", b"{" + b" " * (1536 * 1024) + b"}")
expect(status == 413, f"oversize body: {status} {body}")
status, body = request("POST", "/api/jobs?priority=high", manifest)
expect(status == 400, f"bad priority: {status} {body}")
status, body = request("POST", "/api/jobs?key=openapi-check&delay=3600&priority=5", manifest)
expect(status == 201 and body["queued"], f"submit: {status} {body}")
job = body.get("id")
status, body = request("POST", "/api/jobs?key=openapi-check&delay=3600", manifest)
expect(status == 200 and not body["queued"] and body["id"] == job, f"same key: {status} {body}")

status, body = request("GET", f"/api/jobs/{job}")
expect(status == 200 and body["state"] == "queued" and body["priority"] == 5, f"job: {status} {body}")
status, body = request("GET", "/api/jobs/99999999")
expect(status == 404, f"missing job: {status}")
status, body = request("GET", "/api/jobs?limit=1")
expect(status == 200 and len(body["jobs"]) == 1 and body["jobs"][0]["id"] == job, f"page: {status} {body}")
status, body = request("GET", "/api/jobs?state=queued,running&limit=1000")
expect(status == 200 and job in [j["id"] for j in body["jobs"]] and "next" not in body, f"by state: {status} {body}")
status, body = request("GET", f"/api/jobs?after={job}")
expect(status == 200 and all(j["id"] < job for j in body["jobs"]), f"after: {status} {body}")
status, body = request("GET", "/api/jobs?state=sleeping")
expect(status == 400, f"bad state: {status} {body}")

status, body = request("POST", f"/api/jobs/{job}/cancel", headers={"Origin": "http://elsewhere.example"})
expect(status == 403, f"cross-origin cancel: {status} {body}")
status, body = request("POST", f"/api/jobs/{job}/cancel")
expect(status == 200 and body["state"] == "cancelled", f"cancel: {status} {body}")
status, body = request("POST", f"/api/jobs/{job}/cancel")
expect(status == 409, f"cancel twice: {status} {body}")
status, body = request("POST", f"/api/jobs/{job}/retry")
expect(status == 200 and body["state"] == "queued", f"retry: {status} {body}")
status, body = request("POST", "/api/jobs/99999999/retry")
expect(status == 404, f"retry missing: {status}")
status, body = request("POST", f"/api/jobs/{job}/cancel")
expect(status == 200, f"cancel again: {status}")

# Webhooks: the job's deliveries (none: no endpoint in this farm), the settings, and a job naming a host the
# farm does not allow, refused.
status, body = request("GET", f"/api/jobs/{job}/deliveries")
expect(status == 200 and body == [], f"deliveries: {status} {body}")
status, body = request("GET", "/api/jobs/99999999/deliveries")
expect(status == 404, f"deliveries of a missing job: {status}")
status, body = request("GET", "/api/webhooks")
expect(status == 200 and body["deliveries"]["pending"] == 0 and body["endpoints"] == [], f"webhooks: {status} {body}")
status, body = request("POST", "/api/webhooks/retry?id=99999999&id=99999998")
expect(status == 200 and body == [], f"retry of deliveries that are not there: {status} {body}")
status, body = request("POST", "/api/webhooks/retry?failed=true")
expect(status == 200 and body == [], f"retry of every failed delivery, none: {status} {body}")
status, body = request("POST", "/api/webhooks/retry")
expect(status == 400 and "failed=true" in body.get("error", ""), f"retry of nothing named: {status} {body}")
status, body = request("POST", "/api/webhooks/retry?id=-1")
expect(status == 400 and "positive whole number" in body.get("error", ""), f"retry of id -1: {status} {body}")

# The face serves this document, byte for byte, without a token.
status, body = request("GET", "/api/openapi.json", auth=False)
expect(status == 200 and body == spec, f"/api/openapi.json: {status}, the same as {spec_path}: {body == spec}")

notifying = json.loads(manifest)
notifying["notify"] = ["http://169.254.169.254/latest/meta-data"]
status, body = request("POST", "/api/jobs", json.dumps(notifying).encode())
expect(status == 422 and "169.254.169.254:80" in body.get("error", ""), f"notify to a host not allowed: {status} {body}")

deadline = time.time() + 10
# The API's own events for the job, in order (the coordinator may also start it once it is retried).
names = lambda: [name for name, data in seen if name in ("submitted", "cancelled", "retried") and data.get("job") == job]
while time.time() < deadline and names().count("cancelled") < 2:
    time.sleep(0.1)
expect(names() == ["submitted", "submitted", "cancelled", "retried", "cancelled"], f"events for job {job}: {names()}")
# Every event's data is a CoordinatorEvent as the document describes it, named by its `event`.
event_schema = dict(spec["components"]["schemas"]["CoordinatorEvent"], components=spec["components"])
for name, data in seen:
    if name == "head":
        continue
    for e in jsonschema.Draft202012Validator(event_schema).iter_errors(data):
        failures.append(f"GET /api/events: {name}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    expect(data.get("event") == name, f"GET /api/events: an event named {name} holds {data}")

# The asset library (empty in this farm; the library's own tests fill one).
status, body = request("GET", "/api/assets?type=video&sort=duration&limit=10")
expect(status == 200 and body["assets"] == [] and "nextCursor" not in body, f"assets: {status} {body}")
status, body = request("GET", "/api/assets?type=movie")
expect(status == 400, f"bad type: {status} {body}")
status, body = request("GET", "/api/assets?album=Nope")
expect(status == 404, f"unknown album: {status} {body}")
status, body = request("GET", "/api/assets/0000000000000000000000000g")
expect(status == 404, f"unknown asset: {status} {body}")
status, body = request("GET", "/api/assets/not-an-id")
expect(status == 400, f"malformed asset id: {status} {body}")
# Pictures of an asset (the library's picture tests serve real ones): an unknown asset has none.
for picture in ["poster", "waveform", "storyboard.vtt", "storyboard.json", "storyboard/x-1.jpg", "package/master.m3u8", "package/video-1/1.m4s"]:
    status, body = request("GET", "/api/assets/0000000000000000000000000g/" + picture)
    expect(status == 404, f"{picture} of an unknown asset: {status} {body}")
status, body = request("GET", "/api/assets/not-an-id/poster")
expect(status == 400, f"poster of a malformed asset id: {status} {body}")
status, body = request("GET", "/api/library/resolve?ids=0000000000000000000000000g")
expect(status == 200 and body[0]["status"] == "unknown", f"resolve: {status} {body}")
status, body = request("GET", "/api/coordinators")
expect(status == 200 and [c["thisCoordinator"] for c in body["coordinators"]] == [True], f"coordinators: {status} {body}")
# Pauses of claiming: the farm's, then a coordinator's; the coordinators say they are paused; lifted again.
status, body = request("GET", "/api/queue/pauses")
expect(status == 200 and body == {"pauses": []}, f"pauses: {status} {body}")
status, body = request("POST", "/api/queue/pause")
expect(status == 200 and [p["scope"] for p in body["pauses"]] == ["farm"], f"pause the farm: {status} {body}")
status, body = request("POST", "/api/queue/pause")
expect(status == 200 and len(body["pauses"]) == 1, f"pause the farm again: {status} {body}")
status, body = request("GET", "/api/coordinators")
expect(status == 200 and all(c["paused"] for c in body["coordinators"]), f"coordinators while paused: {status} {body}")
status, body = request("POST", "/api/queue/pause?host=a&coordinator=b:1:c")
expect(status == 400, f"pause with host and coordinator: {status} {body}")
status, body = request("POST", "/api/queue/pause?host=a:b")
expect(status == 400, f"pause of a host with a colon: {status} {body}")
status, body = request("POST", "/api/queue/resume", headers={"Origin": "http://elsewhere.example"})
expect(status == 403, f"cross-origin resume: {status} {body}")
status, body = request("POST", "/api/queue/resume")
expect(status == 200 and body == {"pauses": [], "resumed": True}, f"resume: {status} {body}")
status, body = request("POST", "/api/queue/resume?coordinator=h:1:x")
expect(status == 200 and body["resumed"] is False, f"resume of what was not paused: {status} {body}")
status, body = request("GET", "/api/coordinators")
expect(status == 200 and not any(c["paused"] for c in body["coordinators"]), f"coordinators after the resume: {status} {body}")
status, body = request("GET", "/api/queue/history?span=days")
expect(status == 200 and len(body["buckets"]) == 72, f"history: {status} {body}")
status, body = request("GET", "/api/queue/history")
expect(status == 200 and len(body["buckets"]) == 60 and body["bucketSeconds"] == 60, f"history: {status} {body}")
status, body = request("GET", "/api/queue/history?span=week")
expect(status == 400, f"history of a week: {status} {body}")
status, body = request("GET", "/api/albums")
expect(status == 200 and [a["name"] for a in body][:1] == ["Videos"], f"albums: {status} {body}")
status, body = request("GET", "/api/library/changes")
expect(status == 200 and body["changes"] == [] and body["more"] is False, f"changes: {status} {body}")
status, body = request("GET", "/api/library/changes?since=garbage")
expect(status == 400, f"bad change token: {status} {body}")
status, body = request("POST", "/api/jobs", b'{"version": 1, "input": "asset:0000000000000000000000000g"}')
expect(status == 422 and "no asset" in json.dumps(body), f"unknown asset in a manifest: {status} {body}")

if token:
    status, body = request("GET", "/api/jobs", auth=False)
    expect(status == 401, f"no token: {status}")
    status, body = request("GET", "/metrics", headers={"Authorization": "Bearer wrong-token-of-some-length"}, auth=False)
    expect(status == 401, f"wrong token: {status}")

# The browser's sign-in: the form, a wrong token (the form again, 401), and with a token a session cookie.
status, body = request("GET", "/login", auth=False)
expect(status == 200 and "<form" in body, f"login form: {status}")
status, body = request("POST", "/login", b"token=wrong-token-of-some-length", headers={"Content-Type": "application/x-www-form-urlencoded"},
                       auth=False)
expect(status == (401 if token else 303) or (not token and status == 200), f"login with a wrong token: {status}")

# Signing out: 303 to the sign-in form (not followed, so that its own status is the one checked).
class KeepRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


try:
    with urllib.request.build_opener(KeepRedirects).open(urllib.request.Request(base + "/logout", data=b"", method="POST"), timeout=30) as r:
        status, ctype, data = r.status, r.headers.get("Content-Type", ""), r.read()
except urllib.error.HTTPError as e:
    status, ctype, data = e.code, e.headers.get("Content-Type", ""), e.read()
check("POST", "/logout", status, ctype, data)
expect(status == 303, f"logout: {status}")


# The document is no looser than the server: every value the document accepts for a parameter, the server
# accepts too (a client generated from the document never sends what the server refuses with 400 or 422).
# Strings the document leaves free are probed with "x"; a pattern must come with examples that match it
# (probed unless marked x-semantic: a value only the server's own answers can give, such as a cursor).
def probes(schema, where):
    s = resolve(schema)
    if "enum" in s:
        return [str(v).lower() if isinstance(v, bool) else str(v) for v in s["enum"]]
    kind = s.get("type")
    if kind == "boolean":
        return ["true", "false"]
    if kind in ("integer", "number"):
        bounds = [v for v in (s.get("minimum"), s.get("maximum")) if v is not None]
        return [str(v) for v in bounds] or ["1"]
    if kind == "string":
        if "pattern" not in s:
            return ["x"]
        examples = s.get("examples", [])
        expect(examples, f"{where}: a pattern without examples")
        for e in examples:
            expect(re.search(s["pattern"], e) is not None, f"{where}: the example {e!r} does not match {s['pattern']}")
        return [] if "x-semantic" in s else examples
    return []


refusing_body = b'{"version": 1, "inptu": "x.mp4"}'
for template, item in spec["paths"].items():
    shared = item.get("parameters", [])
    for method in ("get", "post"):
        op = item.get(method)
        if op is None or template == "/api/events":
            continue
        params = [resolve(p) for p in shared + op.get("parameters", [])]
        for param in params:
            if param["in"] not in ("query", "path"):
                continue
            values = probes(param["schema"], f"{method.upper()} {template} {param['name']}")
            if param["in"] == "path" and resolve(param["schema"]).get("type") == "integer":
                values = ["99999999"]   # any integer: one that names no job, so that probes change nothing
            for value in values:
                path = template
                for other in params:
                    if other["in"] == "path":
                        # Another path parameter: its first example when it has one (an asset id), else a number.
                        filler = (resolve(other["schema"]).get("examples") or ["99999999"])[0]
                        path = path.replace("{" + other["name"] + "}", value if other is param else filler)
                if param["in"] == "query":
                    path += "?" + urllib.parse.urlencode({param["name"]: value})
                if template == "/api/library/resolve" and param["name"] != "ids":
                    path += "&ids=0000000000000000000000000g"
                body = refusing_body if (method, template) == ("post", "/api/jobs") else (b"" if method == "post" else None)
                status, answer = request(method.upper(), path, body, headers={"Content-Type": "application/json"} if method == "post" else None)
                refused = status == 400 or (status == 422 and not (body == refusing_body and all(
                    i["path"] == "$.inptu" or i["path"] == "$" for i in answer.get("issues", []))))
                expect(not refused, f"{method.upper()} {template}: the document accepts {param['name']}={value!r}, the server refused it: "
                                    f"{status} {answer}")

# Manifests: the request body is jobs/schema.json (bundled into the document as components.schemas.Manifest),
# as strict as the server where the server's rule is one of form.
validator = jsonschema.Draft202012Validator(dict(resolve({"$ref": "#/components/schemas/Manifest"}), components=spec["components"]))
expect(not list(validator.iter_errors(json.loads(manifest))), "the valid manifest fails jobs/schema.json")
for refused_body in [b'{"version": 1, "inptu": "x.mp4"}', b'{"version": 1, "input": "asset:0000000000000000000000000a"}',
                     b'{"version": 2, "input": "clip.mp4"}', b'{"version": 1, "input": "clip.mp4", "scan": {"symbologies": ["qrr"]}}']:
    status, body = request("POST", "/api/jobs", refused_body)
    expect(status == 422, f"{refused_body!r}: the server answered {status}")
    expect(list(validator.iter_errors(json.loads(refused_body))), f"{refused_body!r}: refused by the server, accepted by jobs/schema.json")

missing = {(m.upper(), p) for p, item in spec["paths"].items() for m in item if m in ("get", "post")} - exercised
for method, path in sorted(missing):
    failures.append(f"{method} {path}: not exercised")
for f in failures:
    print("FAIL", f)
print(f"{len(exercised)} operations exercised, {len(failures)} failures")
sys.exit(1 if failures else 0)
