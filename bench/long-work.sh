#!/usr/bin/env bash
# Long work and many edits (issue "work of any length"), MediaFarm against what a user would script:
#   bench/long-work.sh            (about 15 minutes on 2 cores; media generated once into /tmp)
# 1. Passthrough of a 10 s source cut into 100, 1,000 and 10,000 edits of 0.1 s: peak resident memory
#    (goal: within 1.5x of the 100-edit run, apart from the output's own sample index, which grows with
#    the output's length; ffmpeg remuxing each output shows that share) and time (linear in the edits).
# 2. An 8-minute 720p constant-frame-rate export at preset medium, longer than the default stall limit
#    of 120 s, against the same ffmpeg encode in one interleaved run (goal: ratio <= 1.0, and it
#    completes), with peak memory (goal: < 300 MB, flat in length: a 2-minute export for comparison).
set -euo pipefail
source "$(dirname "$0")/setup.sh" long
[ -f "$media/edits-src.mp4" ] || ff -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine -t 10 \
  -c:v libx264 -preset ultrafast -g 30 -c:a aac "$media/edits-src.mp4"
if [ ! -f "$media/long720.mp4" ]; then
  echo "generating 8 minutes of 720p..." >&2
  ff -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine -t 480 -c:v libx264 -preset ultrafast -c:a aac "$media/long720.mp4"
fi
[ -f "$media/long720-2min.mp4" ] || ff -i "$media/long720.mp4" -t 120 -c copy "$media/long720-2min.mp4"
export MEDIAFARM_OUTPUT_ROOTS="$work"

python3 - "$bin" "$work" "$media" <<'PY'
import json, os, resource, subprocess, sys, time
bin, work, media = sys.argv[1:4]

def measured(cmd):
    """Wall seconds and peak resident MB of one command (GNU time's %M)."""
    start = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return elapsed, int(r.stderr.strip().splitlines()[-1]) / 1024

print("== passthrough, many edits of 0.1 s from a 10 s source")
base = None
for n in (100, 1000, 10000):
    edits = [{"source": f"{media}/edits-src.mp4", "start": f"{(i % 100) / 10:.1f}", "duration": "0.1"} for i in range(n)]
    path = f"{work}/edits{n}.json"
    json.dump({"version": 1, "edits": edits, "overwrite": True,
               "export": {"mode": "passthrough", "output": f"out/edits{n}.mp4", "faststart": False}}, open(path, "w"))
    seconds, peak = measured([bin, "run", path])
    _, remux = measured(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", f"{work}/out/edits{n}.mp4", "-map", "0", "-c", "copy", f"{work}/remux{n}.mp4"])
    base = base or (peak, seconds)
    print(f"{n:>6} edits: {seconds:7.2f} s ({seconds / base[1]:5.1f}x), peak {peak:6.1f} MB ({peak / base[0]:.2f}x); "
          f"ffmpeg -c copy of the same output: peak {remux:.1f} MB")

print("== constant frame rate 720p, preset medium, crf 20")
def cfr_manifest(name, source):
    path = f"{work}/{name}.json"
    json.dump({"version": 1, "input": source, "overwrite": True,
               "export": {"mode": "constantFrameRate", "frameRate": 30, "output": f"out/{name}.mp4", "faststart": False,
                          "video": {"crf": 20, "preset": "medium"}, "audio": {"bitrate": 128000}}}, open(path, "w"))
    return path
def ffmpeg_cfr(source, out):
    return ["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", source, "-vf", "fps=30", "-c:v", "libx264", "-preset", "medium",
            "-crf", "20", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", out]
short_s, short_peak = measured([bin, "run", cfr_manifest("cfr2min", f"{media}/long720-2min.mp4")])
print(f"  2 min: MediaFarm {short_s:.1f} s, peak {short_peak:.1f} MB")
ours_s, ours_peak = measured([bin, "run", cfr_manifest("cfr8min", f"{media}/long720.mp4")])
theirs_s, theirs_peak = measured(ffmpeg_cfr(f"{media}/long720.mp4", f"{work}/ff8min.mp4"))
print(f"  8 min: MediaFarm {ours_s:.1f} s, peak {ours_peak:.1f} MB; ffmpeg {theirs_s:.1f} s, peak {theirs_peak:.1f} MB; "
      f"ratio {ours_s / theirs_s:.2f} (target <= 1.0); memory 8 min / 2 min {ours_peak / short_peak:.2f}")
frames = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-count_packets", "-show_entries", "stream=nb_read_packets",
                         "-of", "csv=p=0", f"{work}/out/cfr8min.mp4"], capture_output=True, text=True).stdout.strip()
print(f"  8 min output: {frames} frames (expected 14400)")
PY
