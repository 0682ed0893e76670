# bench/assemble's measurements (see bench/assemble): argv: mediafarm binary, work folder, segment count.
import json, os, shutil, sqlite3, statistics, subprocess, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from benchlib import log

binary, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(work + "/templates", exist_ok=True)
with open(work + "/templates/segment.json", "w") as f:
    f.write('{ "version": 1, "input": "{input}" }')
with open(work + "/templates/assemble.json", "w") as f:
    f.write('{ "version": 1, "name": "day", "export": { "mode": "passthrough", "output": "day.mp4" } }')

log("== a 5 s capture (1 s segments) with --assemble: its assembly's manifest")
queue = work + "/queue.sqlite"
subprocess.run([binary, "capture", "--source", "lavfi:testsrc2=s=640x360:r=30[out0];sine=f=440:r=48000[out1]",
                "--segment-duration", "1", "--max-duration", "5", "--capture-id", "day", "--output-dir", work + "/recorded",
                "--enqueue", work + "/templates/segment.json", "--assemble", work + "/templates/assemble.json",
                "--queue", "sqlite:" + queue, "--json"], check=True, stdout=subprocess.DEVNULL)
db = sqlite3.connect(queue)
manifest = json.loads(db.execute("SELECT manifest FROM jobs WHERE name = 'day'").fetchone()[0])
db.close()
recorded = manifest["edits"]
# The first segment opens the encoder; the others are what a day is made of.
pattern = recorded[1:] if len(recorded) > 1 else recorded

log(f"== {count} segments (copies of the recording's segments 2-{len(recorded)})")
os.makedirs(work + "/day", exist_ok=True)
edits = []
for i in range(count):
    edit = dict(pattern[i % len(pattern)])
    path = f"{work}/day/day-{i + 1:05d}.mp4"
    shutil.copyfile(edit["source"], path)
    edit["source"] = path
    edits.append(edit)
manifest["edits"] = edits
manifest["export"]["output"] = work + "/day-mediafarm.mp4"
with open(work + "/day.json", "w") as f:
    json.dump(manifest, f)
with open(work + "/concat.txt", "w") as f:
    for e in edits:
        f.write(f"file '{e['source']}'\n")
expected = sum(float(e["duration"].split("/")[0]) / float(e["duration"].split("/")[1]) for e in edits)


def timed(command):
    """Seconds and peak resident MB of `command`, run allowed 1,024 open files."""
    out = subprocess.run(["/usr/bin/prlimit", "--nofile=1024:1024", "/usr/bin/time", "-f", "%e %M"] + command,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{command[0]} failed: {out.stderr[-2000:]}")
    seconds, kb = out.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kb) / 1024


runs = {"mediafarm": [], "ffmpegConcat": []}
for n in range(3):
    for name in runs:
        path = work + ("/day-mediafarm.mp4" if name == "mediafarm" else "/day-ffmpeg.mp4")
        if os.path.exists(path):
            os.unlink(path)
        log(f"== round {n + 1}: {name}")
        if name == "mediafarm":
            runs[name].append(timed([binary, "run", work + "/day.json"]))
        else:
            runs[name].append(timed(["/usr/bin/ffmpeg", "-nostdin", "-v", "error", "-f", "concat", "-safe", "0",
                                     "-i", work + "/concat.txt", "-map", "0", "-c", "copy", work + "/day-ffmpeg.mp4"]))


def duration(path):
    out = subprocess.run(["/usr/bin/ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def pictures(path):
    out = subprocess.run(["/usr/bin/ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-fps_mode", "passthrough",
                          "-f", "framemd5", "-"], capture_output=True, text=True, check=True)
    return [line.split(",")[-1].strip() for line in out.stdout.splitlines() if not line.startswith("#")]


log("== checking the movies")
per_file = {}
segment_pictures = []
for i in range(count):
    # Copies of one segment have the same pictures: each recorded segment is decoded once.
    original = pattern[i % len(pattern)]["source"]
    if original not in per_file:
        per_file[original] = pictures(original)
    segment_pictures += per_file[original]
result = {"segments": count, "segmentsSumSeconds": round(expected, 6)}
for name, path in (("mediafarm", work + "/day-mediafarm.mp4"), ("ffmpegConcat", work + "/day-ffmpeg.mp4")):
    seen = pictures(path)
    result[name] = {
        "seconds": statistics.median(s for s, _ in runs[name]), "peakMB": round(statistics.median(m for _, m in runs[name]), 1),
        "rounds": [[s, round(m, 1)] for s, m in runs[name]],
        "durationSeconds": round(duration(path), 6), "pictures": len(seen), "segmentPictures": len(segment_pictures),
        "samePicturesInOrder": seen == segment_pictures,
    }
result["timeRatio"] = round(result["mediafarm"]["seconds"] / result["ffmpegConcat"]["seconds"], 2)
print(json.dumps(result, indent=1))
