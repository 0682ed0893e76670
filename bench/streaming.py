# The measurements of bench/streaming (see there). Arguments: mediafarm, the movie, a scratch folder, and
# which: ladder, copy or all.
import json, os, shutil, subprocess, sys, time
from benchlib import Hosts, events, log

bin, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
which = sys.argv[4] if len(sys.argv) > 4 else "all"
rungs = [(1080, 5_000_000), (720, 3_000_000), (480, 1_200_000)]


def timed(command, cwd=None):
    """Wall seconds, processor seconds (user + system) and peak resident MB of a command (GNU time)."""
    started = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M"] + command, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - started
    if r.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {r.stderr[-2000:]}")
    user, system, peak = r.stderr.strip().splitlines()[-1].split()
    return {"seconds": round(seconds, 2), "cpuSeconds": round(float(user) + float(system), 2), "peakMB": round(int(peak) / 1024, 1)}


def ladder_manifest(folder, name, chunk_seconds=None):
    """The ladder's manifest, written into `folder`; its path."""
    stream = {"output": os.path.join(folder, "package"), "segmentSeconds": 6, "frameRate": 30,
              "video": {"rungs": [{"height": h, "bitrate": b} for h, b in rungs], "preset": "veryfast"},
              "audio": {"bitrate": 128000}}
    if chunk_seconds:
        stream["chunkSeconds"] = chunk_seconds
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"version": 1, "name": name, "input": source, "reuse": False, "stream": stream}, f)
    return path


def mediafarm():
    folder = os.path.join(work, "mediafarm")
    os.makedirs(folder)
    return timed([bin, "run", ladder_manifest(folder, "ladder")])


def chunked(hosts=2, chunk_seconds=60):
    """The ladder in chunks of `chunk_seconds` by `hosts` coordinators of one worker each, each in a network
    namespace of its own reaching one PostgreSQL queue over a veth pair (as the hosts' tests do). They share
    this machine's cores: what is measured is the work, not the time. Returns the coordinators' summed
    processor time (their workers' within it), the wall time, the join's seconds and the chunks."""
    folder = os.path.join(work, "chunked")
    os.makedirs(folder)
    os.chmod(work, 0o755)
    coordinators = []
    with Hosts("mfbench", hosts, work) as network:
        try:
            url = network.url
            subprocess.run([bin, "queue", "migrate", "--queue", url], check=True, capture_output=True)
            subprocess.run([bin, "submit", "--queue", url, ladder_manifest(folder, "ladder-chunked", chunk_seconds)], check=True, capture_output=True)
            began = time.perf_counter()
            for i, (ns, address) in enumerate(network.namespaces):
                log_file = open(os.path.join(folder, f"host{i}.log"), "w")
                command = ["ip", "netns", "exec", ns, "/usr/bin/time", "-f", "%U %S %M", "-o", os.path.join(folder, f"host{i}.time"),
                           bin, "coordinator", "--queue", url.replace("127.0.0.1", address), "--workers", "1", "--host", f"host{i}",
                           "--json", "--exit-when-idle"]
                # Each host its own spool and temporary folder, as separate machines have.
                own = {name: os.path.join(folder, f"host{i}-{name.lower()}") for name in ("MEDIAFARM_SPOOL", "TMPDIR")}
                for path in own.values():
                    os.makedirs(path)
                coordinators.append(subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=dict(os.environ, **own)))
            codes = [c.wait() for c in coordinators]
            seconds = time.perf_counter() - began
        finally:
            # Before their network and their queue go.
            for c in coordinators:
                if c.poll() is None:
                    c.kill()
                    c.wait()
    if any(codes):
        raise SystemExit(f"a coordinator failed ({codes}): " + open(os.path.join(folder, "host0.log")).read()[-2000:])
    cpu = 0.0
    for i in range(hosts):
        user, system, _ = open(os.path.join(folder, f"host{i}.time")).read().strip().splitlines()[-1].split()
        cpu += float(user) + float(system)
    # Each host's log: the chunks it made, and the join where it ran.
    finished = {i: [e for e in events(os.path.join(folder, f"host{i}.log")) if e.get("event") == "finished" and e.get("state") == "succeeded"]
                for i in range(hosts)}
    chunks = {i: [e for e in finished[i] if "[chunk " in e.get("name", "")] for i in range(hosts)}
    join = [e for i in range(hosts) for e in finished[i] if e.get("name") == "ladder-chunked"]
    return {"seconds": round(seconds, 2), "cpuSeconds": round(cpu, 2), "chunks": sum(len(c) for c in chunks.values()),
            "chunkSeconds": chunk_seconds, "joinSeconds": round(join[-1]["seconds"], 2) if join else None,
            "chunksPerHost": {f"host{i}": len(chunks[i]) for i in range(hosts)}}


def ffmpeg():
    folder = os.path.join(work, "ffmpeg")
    os.makedirs(folder)
    splits = "".join(f"[s{i}]" for i in range(len(rungs)))
    graph = f"[0:v]split={len(rungs)}{splits};" + ";".join(f"[s{i}]scale=-2:{h}[v{i}]" for i, (h, _) in enumerate(rungs))
    command = ["ffmpeg", "-nostdin", "-v", "error", "-i", source, "-filter_complex", graph]
    for i, (_, rate) in enumerate(rungs):
        command += ["-map", f"[v{i}]", f"-c:v:{i}", "libx264", f"-b:v:{i}", str(rate), f"-maxrate:v:{i}", str(rate * 3 // 2),
                    f"-bufsize:v:{i}", str(rate * 3)]
    command += ["-map", "0:a:0", "-c:a", "aac", "-b:a", "128k", "-preset", "veryfast", "-g", "180", "-keyint_min", "180",
                "-sc_threshold", "0", "-r", "30", "-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4",
                "-var_stream_map", " ".join(f"v:{i},agroup:audio" for i in range(len(rungs))) + " a:0,agroup:audio",
                "-master_pl_name", "master.m3u8", "-hls_segment_filename", os.path.join(folder, "%v", "%d.m4s"), os.path.join(folder, "%v", "index.m3u8")]
    return timed(command)


def copy_mediafarm(folder):
    manifest = {"version": 1, "name": "copy", "input": source, "reuse": False,
                "stream": {"output": os.path.join(folder, "package"), "mode": "passthrough", "segmentSeconds": 6}}
    path = os.path.join(work, "copy.json")
    with open(path, "w") as f:
        json.dump(manifest, f)
    return timed([bin, "run", path])


def copy_ffmpeg(folder):
    os.makedirs(folder)
    return timed(["ffmpeg", "-nostdin", "-v", "error", "-i", source, "-c", "copy", "-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod",
                  "-hls_segment_type", "fmp4", "-hls_segment_filename", os.path.join(folder, "%d.m4s"), os.path.join(folder, "index.m3u8")])


def packaging():
    """Each packages the movie twice (the first warms the cache); the second is measured. Throughput: the
    movie's bytes a second."""
    size = os.path.getsize(source)
    figures = {}
    for name, run in (("mediafarm", copy_mediafarm), ("ffmpeg", copy_ffmpeg)):
        for attempt in range(2):
            folder = os.path.join(work, f"copy-{name}")
            shutil.rmtree(folder, ignore_errors=True)
            if name == "mediafarm":
                os.makedirs(folder)
            figures[name] = run(folder)
        figures[name]["MBperSecond"] = round(size / 1e6 / figures[name]["seconds"], 1)
        log(f"packaging, {name}: {figures[name]}")
    return {"sourceMB": round(size / 1e6, 1), "mediafarm": figures["mediafarm"], "ffmpeg": figures["ffmpeg"],
            "throughputRatio": round(figures["mediafarm"]["MBperSecond"] / figures["ffmpeg"]["MBperSecond"], 3)}


summary = {"source": os.path.basename(source)}
if which in ("all", "ladder"):
    log("mediafarm ...")
    ours = mediafarm()
    log(f"mediafarm: {ours}")
    log("ffmpeg ...")
    theirs = ffmpeg()
    log(f"ffmpeg: {theirs}")
    log("mediafarm in chunks over two coordinators ...")
    chunks = chunked()
    log(f"chunked: {chunks}")
    summary["ladder"] = {"rungs": [f"{h}p {b}" for h, b in rungs], "mediafarm": ours, "ffmpeg": theirs,
                         "timeRatio": round(ours["seconds"] / theirs["seconds"], 3), "cpuRatio": round(ours["cpuSeconds"] / theirs["cpuSeconds"], 3),
                         "memoryRatio": round(ours["peakMB"] / theirs["peakMB"], 3),
                         "chunked": chunks, "chunkedCpuRatio": round(chunks["cpuSeconds"] / ours["cpuSeconds"], 3),
                         "joinShare": round(chunks["joinSeconds"] / ours["seconds"], 4) if chunks["joinSeconds"] else None}
if which in ("all", "copy"):
    summary["packaging"] = packaging()
print(json.dumps(summary, indent=2))
