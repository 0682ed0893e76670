# The measurements of bench/images (see there). Arguments: mediafarm, the movie, a scratch folder, the rounds.
import json, os, random, re, statistics, subprocess, sys, time
from benchlib import log, percentiles

bin, source, work, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def timed(command):
    """Wall seconds and peak resident MB of a command (GNU time)."""
    started = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if r.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {r.stderr[-1500:]}")
    peak = int(r.stderr.strip().splitlines()[-1]) / 1024
    return seconds, peak


duration = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", source],
                                capture_output=True, text=True, check=True).stdout)
runs = {"storyboard": [], "ffmpegNokey": [], "jellyfinDefault": [], "exact20": [], "ffmpegSeek20": [], "keyframe20": []}
random.seed(7)
times = sorted(round(random.uniform(0, duration - 1), 3) for _ in range(20))
for r in range(rounds):
    out = os.path.join(work, f"r{r}")
    os.makedirs(out)
    runs["storyboard"].append(timed([bin, "storyboard", "--every", "10", "--tile-width", "160", "--columns", "10", "--rows", "10",
                                     "-o", os.path.join(out, "board"), source]))
    runs["ffmpegNokey"].append(timed(["ffmpeg", "-nostdin", "-v", "error", "-skip_frame", "nokey", "-i", source, "-vf",
                                      "fps=1/10,scale=160:-2,tile=10x10", "-q:v", "5", os.path.join(out, "nokey-%d.jpg")]))
    runs["jellyfinDefault"].append(timed(["ffmpeg", "-nostdin", "-v", "error", "-i", source, "-vf",
                                          "fps=1/10,scale=160:-2,tile=10x10", "-q:v", "5", os.path.join(out, "all-%d.jpg")]))
    at = [a for t in times for a in ("--at", str(t))]
    runs["exact20"].append(timed([bin, "images", "--exact", *at, "-o", os.path.join(out, "exact-{index}.jpg"), source]))
    runs["keyframe20"].append(timed([bin, "images", *at, "-o", os.path.join(out, "key-{index}.jpg"), source]))
    started = time.perf_counter()
    for i, t in enumerate(times):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-ss", str(t), "-i", source, "-frames:v", "1",
                        os.path.join(out, f"ff-{i}.jpg")], check=True)
    runs["ffmpegSeek20"].append((time.perf_counter() - started, 0))
    log(f"round {r + 1}: storyboard {runs['storyboard'][-1][0]:.1f} s, nokey {runs['ffmpegNokey'][-1][0]:.1f} s, "
        f"all frames {runs['jellyfinDefault'][-1][0]:.1f} s, exact x20 {runs['exact20'][-1][0]:.2f} s, ffmpeg -ss x20 {runs['ffmpegSeek20'][-1][0]:.2f} s")
    tiles = len(open(os.path.join(out, "board", os.path.splitext(os.path.basename(source))[0] + ".vtt")).read().split("-->"))
    assert tiles - 1 == int(-(-duration // 10)), f"{tiles - 1} cues"

# Posters as jobs in a kept worker (one coordinator, one worker kept between jobs): the worker's own time per
# job (the result's seconds: the input's inspection, the picture, the file written), nearest keyframe and exact.
def poster_jobs(exact):
    folder = os.path.join(work, "posters-exact" if exact else "posters-key")
    os.makedirs(folder)
    queue = "sqlite:" + os.path.join(folder, "queue.sqlite")
    random.seed(11 if exact else 13)
    paths = []
    for i in range(30):
        at = round(random.uniform(0, duration - 1), 3)
        tolerance = ', "tolerance": 0' if exact else ""
        path = os.path.join(folder, f"p{i}.json")
        with open(path, "w") as f:
            json.dump(json.loads(f'{{"version": 1, "name": "p{i}", "input": "{source}", "reuse": false, '
                                 f'"poster": {{"at": {at}{tolerance}, "output": "out/p{i}.jpg"}}}}'), f)
        paths.append(path)
    env = dict(os.environ, MEDIAFARM_QUEUE=queue)
    subprocess.run([bin, "submit", *paths], check=True, capture_output=True, env=env)
    subprocess.run([bin, "coordinator", "--workers", "1", "--exit-when-idle"], check=True, capture_output=True, env=env)
    jobs = json.loads(subprocess.run([bin, "status", "--json", "--all", "--chunks"], check=True, capture_output=True, text=True, env=env).stdout)
    seconds = [j["result"]["seconds"] * 1000 for j in jobs if j.get("state") == "succeeded"]
    assert len(seconds) == 30, f"{len(seconds)} posters made: {jobs[:2]}"
    return seconds


posters = {"keyframe": [], "exact": []}
for r in range(rounds):
    posters["keyframe"] += poster_jobs(False) if r == 0 else []
    posters["exact"] += poster_jobs(True) if r == 0 else []
log(f"posters in a kept worker: keyframe p50 {statistics.median(posters['keyframe']):.1f} ms, exact p95 "
    f"{sorted(posters['exact'])[int(0.95 * (len(posters['exact']) - 1))]:.1f} ms")

# The other sources the goals name, 60 s each (made once beside the movie): 10-bit HEVC, a phone's clip turned
# 90 degrees, anamorphic video (4:3 pixels). A storyboard against ffmpeg's keyframes-only one, and 5 exact
# pictures in one process against 5 ffmpeg -ss.
media = os.path.dirname(source)
variants = {
    "hevc10": ("hevc-10bit-720p-60s.mp4", ["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=25:d=60", "-c:v", "libx265", "-preset", "ultrafast",
                                           "-x265-params", "keyint=50:min-keyint=50:log-level=error", "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1"]),
    "rotated": ("phone-rotated-60s.mp4", ["-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=30:d=60", "-c:v", "libx264", "-preset", "ultrafast",
                                          "-g", "60", "-pix_fmt", "yuv420p", "-movflags", "+faststart"]),
    "anamorphic": ("anamorphic-60s.mp4", ["-f", "lavfi", "-i", "testsrc2=s=1440x1080:r=25:d=60", "-vf", "setsar=4/3", "-c:v", "libx264",
                                          "-preset", "ultrafast", "-g", "50", "-pix_fmt", "yuv420p"]),
}
others = {}
for label, (name, args) in variants.items():
    path = os.path.join(media, name)
    if not os.path.exists(path):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args, path + ".part.mp4"], check=True)
        if label == "rotated":
            # A phone's 90-degree display matrix {0 1 0, -1 0 0, h 0 1} in the track header (FFmpeg 5.1 writes none).
            data = bytearray(open(path + ".part.mp4", "rb").read())
            at = data.find(b"tkhd") + 4 + 40
            for i, v in enumerate([0, 0x10000, 0, -0x10000, 0, 0, 1080 << 16, 0, 0x40000000]):
                data[at + 4 * i:at + 4 * i + 4] = (v & 0xFFFFFFFF).to_bytes(4, "big")
            open(path + ".part.mp4", "wb").write(data)
        os.rename(path + ".part.mp4", path)
    out = os.path.join(work, label)
    os.makedirs(out)
    board = timed([bin, "storyboard", "--every", "2", "-o", os.path.join(out, "board"), path])
    nokey = timed(["ffmpeg", "-nostdin", "-v", "error", "-skip_frame", "nokey", "-i", path, "-vf", "fps=1/2,scale=160:-2,tile=10x10",
                   "-q:v", "5", os.path.join(out, "nokey-%d.jpg")])
    at = [round(5 + 10 * i + 0.37 * i, 3) for i in range(5)]
    exact = timed([bin, "images", "--exact", *[a for t in at for a in ("--at", str(t))], "-o", os.path.join(out, "e-{index}.jpg"), path])
    started = time.perf_counter()
    for i, t in enumerate(at):
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-ss", str(t), "-i", path, "-frames:v", "1", os.path.join(out, f"f-{i}.jpg")], check=True)
    seek = time.perf_counter() - started
    size = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", os.path.join(out, "e-1.jpg")],
                          capture_output=True, text=True).stdout.strip()
    others[label] = {"storyboardSeconds": round(board[0], 2), "ffmpegSkipNokeySeconds": round(nokey[0], 2),
                     "storyboardRatio": round(board[0] / nokey[0], 3), "fiveExactSeconds": round(exact[0], 2),
                     "ffmpegSeekSeconds": round(seek, 2), "exactRatio": round(exact[0] / seek, 3), "pictureSize": size}
    log(f"{label}: storyboard {board[0]:.2f} s against {nokey[0]:.2f} s, 5 exact {exact[0]:.2f} s against {seek:.2f} s, pictures {size}")

med = {k: statistics.median(s for s, _ in v) for k, v in runs.items()}
peak = {k: max(m for _, m in v) for k, v in runs.items()}
summary = {
    "movie": {"seconds": round(duration, 1), "size": "1920x1080", "gop": "2 s"},
    "storyboard": {"mediafarmSeconds": round(med["storyboard"], 2), "peakMB": round(peak["storyboard"], 1),
                   "ffmpegSkipNokeySeconds": round(med["ffmpegNokey"], 2), "ffmpegAllFramesSeconds": round(med["jellyfinDefault"], 2),
                   "ratioToSkipNokey": round(med["storyboard"] / med["ffmpegNokey"], 3),
                   "ratioToAllFrames": round(med["storyboard"] / med["jellyfinDefault"], 3),
                   "secondsPerHour": round(med["storyboard"] * 3600 / duration, 1)},
    "twentyPictures": {"exactSeconds": round(med["exact20"], 2), "keyframeSeconds": round(med["keyframe20"], 2),
                       "ffmpegSeekSeconds": round(med["ffmpegSeek20"], 2),
                       "exactRatioToFFmpegSeek": round(med["exact20"] / med["ffmpegSeek20"], 3)},
    "postersInAKeptWorker": {"keyframeMilliseconds": percentiles(posters["keyframe"]),
                             "exactMilliseconds": percentiles(posters["exact"]),
                             "exactP95Milliseconds": round(sorted(posters["exact"])[int(0.95 * (len(posters["exact"]) - 1))], 1),
                             # An exact poster (its p50) against one `ffmpeg -ss T -i SRC -frames:v 1` (the 20 runs' median time per run).
                             "exactRatioToOneFFmpegSeek": round(statistics.median(posters["exact"]) / (med["ffmpegSeek20"] * 1000 / 20), 3)},
    "otherSources": others,
    "rounds": rounds,
    "machine": {"cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d")},
}
print(json.dumps(summary, indent=2))
