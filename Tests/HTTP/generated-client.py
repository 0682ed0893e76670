#!/usr/bin/env python3
"""Generates a Python client from docs/openapi.json with openapi-python-client, as a user of the API would,
then submits, finds, lists and cancels a job through it, and sends deliveries again, against a running
coordinator. Fails if the generator leaves out an operation other than the pictures (the generator has no
image/* responses) or names an operation by its path rather than its operationId.

usage: generated-client.py SPEC BASE_URL MANIFEST TOKEN
The generator is installed by script/bootstrap under .build/openapi-client (PYTHONPATH)."""
import json, pathlib, subprocess, sys, tempfile

spec_path, base, manifest_path, token = sys.argv[1:5]
spec = json.load(open(spec_path))
work = pathlib.Path(tempfile.mkdtemp(prefix="mediafarm-client-"))
generated = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", spec_path, "--meta", "none",
                            "--output-path", str(work / "mediafarm_client")], capture_output=True, text=True, cwd=work)
output = generated.stdout + generated.stderr
if generated.returncode != 0:
    sys.exit(f"the generator failed ({generated.returncode}):\n{output}")
failures = []
# Each warning names an operation it could not generate whole; the pictures' image/* answers are the only expected ones.
for line in output.splitlines():
    if line.startswith("WARNING parsing") and " within pictures" not in line:
        failures.append(f"generator: {line}")

# Every operation is a module named by its operationId, under its tag.
for path, item in spec["paths"].items():
    for method, op in item.items():
        if method in ("get", "post"):
            module = work / "mediafarm_client" / "api" / op["tags"][0] / (
                "".join("_" + c.lower() if c.isupper() else c for c in op["operationId"]).lstrip("_") + ".py")
            if not module.exists() and op["tags"][0] != "pictures":
                failures.append(f"{method.upper()} {path}: no {module.relative_to(work)}")

sys.path.insert(0, str(work))
from mediafarm_client import AuthenticatedClient  # noqa: E402
from mediafarm_client.api.jobs import submit_job, get_job, list_jobs, cancel_job  # noqa: E402
from mediafarm_client.api.webhooks import retry_deliveries  # noqa: E402
from mediafarm_client.models import Error, Submitted, JobPage, Job  # noqa: E402

client = AuthenticatedClient(base_url=base, token=token)
manifest = json.load(open(manifest_path))
submitted = submit_job.sync(client=client, body=manifest, delay=3600)
if not isinstance(submitted, Submitted):
    sys.exit(f"submit: {submitted!r}")
job_id = submitted.id
job = get_job.sync(client=client, id=job_id)
if not isinstance(job, Job) or job.name != manifest["name"] or job.state.value != "queued":
    failures.append(f"get: {job!r}")
page = list_jobs.sync(client=client, limit=10)
if not isinstance(page, JobPage) or job_id not in [j.id for j in page.jobs]:
    failures.append(f"list: {page!r}")
cancelled = cancel_job.sync(client=client, id=job_id)
if not isinstance(cancelled, Job) or cancelled.state.value != "cancelled":
    failures.append(f"cancel: {cancelled!r}")
refused = submit_job.sync(client=client, body={"version": 1, "inptu": "x.mp4"})
if not isinstance(refused, Error) or "inptu" not in json.dumps(refused.to_dict()):
    failures.append(f"a refused manifest: {refused!r}")
resent = retry_deliveries.sync(client=client, id=[99999999])
if resent != []:
    failures.append(f"retry of a delivery that is not there: {resent!r}")
for f in failures:
    print("FAIL", f)
print(f"job {job_id} submitted, listed and cancelled through the generated client; {len(failures)} failures")
sys.exit(1 if failures else 0)
