# bench/s3's measurements (see bench/s3): argv: mediafarm binary, work folder, endpoint, access key, secret.
import http.client, http.server, json, os, socketserver, statistics, subprocess, sys, threading, time, urllib.parse
sys.path.insert(0, os.path.dirname(__file__))
from benchlib import log

binary, work, endpoint, key, secret = sys.argv[1:6]
import boto3
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1")
target = urllib.parse.urlparse(endpoint)


class Counts:
    lock = threading.Lock()
    requests = 0
    bytes = 0

    @classmethod
    def reset(cls):
        with cls.lock:
            cls.requests, cls.bytes = 0, 0


class Relay(http.server.BaseHTTPRequestHandler):
    """Forwards every request to the server as it came (the Host header too, which the signature covers) and
    counts the requests and the response bytes it passed on to the client."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            upstream.putheader(name, value)
        upstream.endheaders(body)
        answer = upstream.getresponse()
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "transfer-encoding"):
                self.send_header(name, value)
        self.end_headers()
        with Counts.lock:
            Counts.requests += 1
        try:
            while True:
                chunk = answer.read(65536)
                if not chunk:
                    break
                self.wfile.write(chunk)
                with Counts.lock:
                    Counts.bytes += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        upstream.close()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = relay


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


relay = Server(("127.0.0.1", 0), Relay)
threading.Thread(target=relay.serve_forever, daemon=True).start()
proxy = f"http://127.0.0.1:{relay.server_address[1]}"
from botocore.config import Config
proxied = boto3.client("s3", endpoint_url=proxy, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1",
                       config=Config(signature_version="s3v4"))
environment = dict(os.environ, MEDIAFARM_S3_ENDPOINT=endpoint, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
                   AWS_REGION="us-east-1", MEDIAFARM_SPOOL=work + "/spool")


def timed(command, env=None):
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env or environment)
    return time.monotonic() - started


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


s3.create_bucket(Bucket="bench-in")
s3.create_bucket(Bucket="bench-out")
log("== 100 objects: 5 movies (index at the end and at the start; 10 s, 60 s, 300 s), 20 copies each")
movies = []
for seconds, size in [(10, "640x360"), (60, "320x180"), (300, "160x90")]:
    end = f"{work}/end-{seconds}.mp4"
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000",
           "-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-shortest", end)
    movies.append(end)
    if seconds != 10:
        start = f"{work}/start-{seconds}.mp4"
        ffmpeg("-i", end, "-c", "copy", "-movflags", "+faststart", start)
        movies.append(start)
keys = []
for i in range(100):
    movie = movies[i % len(movies)]
    k = f"inspect/{i:03d}-{os.path.basename(movie)}"
    s3.upload_file(movie, "bench-in", k)
    keys.append(k)

log("== inspect: mediafarm inspect --json against ffprobe of presigned URLs, 4 at a time, through the counting relay")
rounds = {"mediafarm": [], "ffprobe": []}
traffic = {}
for _ in range(3):
    Counts.reset()
    env = dict(environment, MEDIAFARM_S3_ENDPOINT=proxy)
    rounds["mediafarm"].append(timed([binary, "inspect", "--json", "--concurrency", "4"] + [f"s3://bench-in/{k}" for k in keys], env))
    traffic["mediafarm"] = (Counts.requests, Counts.bytes)
    urls = [proxied.generate_presigned_url("get_object", Params={"Bucket": "bench-in", "Key": k}, ExpiresIn=3600) for k in keys]
    Counts.reset()
    started = time.monotonic()
    subprocess.run(["xargs", "-P", "4", "-n", "1", "ffprobe", "-v", "error", "-show_format", "-show_streams"],
                   input="\n".join(urls).encode(), check=True, stdout=subprocess.DEVNULL)
    rounds["ffprobe"].append(time.monotonic() - started)
    traffic["ffprobe"] = (Counts.requests, Counts.bytes)
inspect = {tool: {"seconds": round(statistics.median(v), 2), "requests": traffic[tool][0], "bytes": traffic[tool][1]}
           for tool, v in rounds.items()}
inspect["seconds_ratio"] = round(inspect["mediafarm"]["seconds"] / inspect["ffprobe"]["seconds"], 2)
inspect["bytes_ratio"] = round(inspect["mediafarm"]["bytes"] / inspect["ffprobe"]["bytes"], 3)
inspect["total_object_bytes"] = sum(os.path.getsize(movies[i % len(movies)]) for i in range(100))

log("== 60 s of 1080p")
hd = f"{work}/hd.mp4"
ffmpeg("-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000",
       "-t", "60", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-b:v", "20M", "-c:a", "aac", "-shortest", hd)
s3.upload_file(hd, "bench-in", "hd.mp4")


def manifest(name, source, output):
    path = f"{work}/{name}.json"
    with open(path, "w") as f:
        json.dump({"version": 1, "overwrite": True, "edits": [{"source": source, "start": 0.5, "duration": 59}],
                   "export": {"mode": "passthrough", "output": output}}, f)
    return path


local = manifest("local", hd, f"{work}/out/cut.mp4")
remote = manifest("remote", "s3://bench-in/hd.mp4", "s3://bench-out/cut.mp4")
to_object = manifest("to-object", hd, "s3://bench-out/cut-from-file.mp4")
os.makedirs(f"{work}/out", exist_ok=True)
export_rounds = {"file_to_file": [], "object_to_object": [], "file_to_object": [], "file_then_aws_cp": [], "aws_cp": [],
                 "aws_download": [], "download_cut_upload": []}
roots = ["--output-root", f"{work}/out", "--output-root", "s3://bench-out"]
aws_env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1")
for _ in range(3):
    export_rounds["file_to_file"].append(timed([binary, "run", *roots, local]))
    export_rounds["object_to_object"].append(timed([binary, "run", *roots, remote]))
    export_rounds["file_to_object"].append(timed([binary, "run", *roots, to_object]))
    copy = timed(["aws", "--endpoint-url", endpoint, "s3", "cp", f"{work}/out/cut.mp4", "s3://bench-out/cut-aws.mp4"], aws_env)
    export_rounds["aws_cp"].append(copy)
    export_rounds["file_then_aws_cp"].append(export_rounds["file_to_file"][-1] + copy)
    # What a script does with objects: download, cut the file, upload.
    download = timed(["aws", "--endpoint-url", endpoint, "s3", "cp", "s3://bench-in/hd.mp4", f"{work}/downloaded.mp4"], aws_env)
    export_rounds["aws_download"].append(download)
    export_rounds["download_cut_upload"].append(download + export_rounds["file_to_file"][-1] + copy)
medians = {k: round(statistics.median(v), 2) for k, v in export_rounds.items()}
upload_alone = round(medians["file_to_object"] - medians["file_to_file"], 2)
result = {
    "inspect_100_objects": inspect,
    "passthrough_60s_1080p": {
        "source_bytes": os.path.getsize(hd), "output_bytes": os.path.getsize(f"{work}/out/cut.mp4"),
        "seconds": medians,
        "object_to_object_over_file_to_file": round(medians["object_to_object"] / medians["file_to_file"], 2),
        "object_to_object_over_download_cut_upload": round(medians["object_to_object"] / medians["download_cut_upload"], 2),
        "file_to_object_over_file_then_aws_cp": round(medians["file_to_object"] / medians["file_then_aws_cp"], 2),
        "upload_alone_seconds": upload_alone,
        "upload_alone_over_aws_cp": round(upload_alone / medians["aws_cp"], 2),
    },
}
print(json.dumps(result, indent=2))
