#!/usr/bin/env bash
# Exact cuts in passthrough (issue "exact cuts"): ten edits, each starting 0.7 s after a keyframe, from
# ten minutes of 1080p H.264 with B-frames and a keyframe every 2 s, against what a user would otherwise run:
#   bench/cuts.sh                 (about 12 minutes on 2 cores; media generated once into /tmp)
# 1. mp4 (edit lists), ten cuts making a 10-minute output (10 x 59 s) and a 100 s one (10 x 10 s), against
#    `ffmpeg -c copy` of the same duration (goal: ratio <= 1.5). MediaFarm fsyncs its output before
#    renaming it into place, so the ffmpeg side is followed by `sync FILE` (fsync) to compare like with like.
# 2. The same, faststart (the index moved to the front: one more pass over the file).
# 3. Against a full re-encode of the 470 s of edits (ffmpeg, libx264 veryfast, crf 20; goal <= 0.1).
# 4. mkv (smart rendering: the frames from each cut to the next keyframe re-encoded), against the same.
# 5. Frames re-encoded per cut (goal: at most one GOP) and frames copied only to be decoded, from the reports.
# 6. "cuts": "smart" into mp4 (no multi-entry edit lists) against the re-encode (goal <= 0.1) and against
#    LosslessCut's way (`ffmpeg -ss START -t LEN -c copy` per edit, then the concat demuxer, which snaps
#    each cut to a keyframe), with the frames each output shows at their places (100 s of edits, frames
#    compared with the composition's at 64x36, PSNR >= 35 dB).
set -euo pipefail
source "$(dirname "$0")/setup.sh" cuts
if [ ! -f "$media/1080p-bframes-60s.mp4" ]; then
  echo "generating 60 s of 1080p with B-frames..." >&2
  ff -f lavfi -i testsrc2=s=1920x1080:r=30:d=60 -f lavfi -i sine=f=440:sample_rate=48000:d=60 \
     -c:v libx264 -preset ultrafast -bf 2 -x264-params keyint=60:min-keyint=60:scenecut=0:b-adapt=0 \
     -pix_fmt yuv420p -c:a aac -ac 2 "$media/1080p-bframes-60s.mp4"
fi
if [ ! -f "$media/1080p-bframes-10min.mp4" ]; then
  for i in $(seq 10); do echo "file '$media/1080p-bframes-60s.mp4'"; done > "$media/ten-bframes.txt"
  ff -f concat -safe 0 -i "$media/ten-bframes.txt" -c copy "$media/1080p-bframes-10min.mp4"
fi
src="$media/1080p-bframes-10min.mp4"
export MEDIAFARM_OUTPUT_ROOTS="$work"

python3 - "$src" "$work" <<'PY'
import json, sys
src, work = sys.argv[1:3]
def edits(length):
    return [{"source": src, "start": f"{60 * i + 12.7:.1f}", "duration": str(length)} for i in range(10)]
for name, length, ext, faststart in (("ten-min", 47, "mp4", False), ("hundred", 10, "mp4", False),
                                     ("hundred-fs", 10, "mp4", True), ("ten-min-mkv", 47, "mkv", None), ("hundred-mkv", 10, "mkv", None),
                                     ("ten-min-smart", 47, "mp4", None), ("hundred-smart", 10, "mp4", None)):
    export = {"mode": "passthrough", "output": f"out/{name}.{ext}"}
    if faststart is not None: export["faststart"] = faststart
    if name.endswith("-smart"): export["cuts"] = "smart"
    json.dump({"version": 1, "edits": edits(length), "overwrite": True, "report": f"out/{name}-report.json", "export": export},
              open(f"{work}/{name}.json", "w"))
# The ten 47 s edits re-encoded by ffmpeg: trim + concat in one filter graph.
parts = "".join(f"[0:v]trim=start={60 * i + 12.7:.1f}:duration=47,setpts=PTS-STARTPTS[v{i}];"
                f"[0:a]atrim=start={60 * i + 12.7:.1f}:duration=47,asetpts=PTS-STARTPTS[a{i}];" for i in range(10))
open(f"{work}/graph.txt", "w").write(parts + "".join(f"[v{i}][a{i}]" for i in range(10)) + "concat=n=10:v=1:a=1[v][a]")
PY
copy() { echo "sh -c 'ffmpeg -nostdin -y -v error -i $src -t $1 -map 0 -c copy $2 $work/$3 && sync $work/$3'"; }

runs=${RUNS:-3}
echo
bench/compare.py "mp4, 10 cuts, 470 s out" 1.5 "$runs" "$bin run $work/ten-min.json" "ffmpeg -c copy" "$(copy 470 "" ff1.mp4)"
bench/compare.py "mp4, 10 cuts, 100 s out" 1.5 "$runs" "$bin run $work/hundred.json" "ffmpeg -c copy" "$(copy 100 "" ff2.mp4)"
bench/compare.py "mp4 faststart, 100 s out" 1.5 "$runs" "$bin run $work/hundred-fs.json" "ffmpeg +faststart" \
  "$(copy 100 "-movflags +faststart" ff3.mp4)"
bench/compare.py "mkv, 10 cuts, 470 s out" 1.5 "$runs" "$bin run $work/ten-min-mkv.json" "ffmpeg -c copy" "$(copy 470 "" ff4.mkv)"
bench/compare.py "mkv, 10 cuts, 100 s out" 1.5 "$runs" "$bin run $work/hundred-mkv.json" "ffmpeg -c copy" "$(copy 100 "" ff5.mkv)"
# One run each (the re-encode takes minutes): the same 470 s of edits.
python3 - "$bin" "$work" "$src" <<'PY'
import subprocess, sys, time
bin, work, src = sys.argv[1:4]
def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
full = timed(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", src, "-filter_complex_script", f"{work}/graph.txt",
              "-map", "[v]", "-map", "[a]", "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-c:a", "aac", f"{work}/re.mp4"])
for name in ("ten-min", "ten-min-mkv", "ten-min-smart"):
    ours = timed([bin, "run", f"{work}/{name}.json"])
    verdict = "met" if ours / full <= 0.1 else "NOT met"
    print(f"{name + ' vs re-encode':<28} mediafarm {ours:8.3f} s   ffmpeg x264 veryfast {full:8.3f} s   ratio {ours / full:.3f}  (target <= 0.1: {verdict}; one run)")
PY

python3 - "$work/out" <<'PY'
import json, subprocess, sys
out = sys.argv[1]
for name, ext, frames in (("ten-min", "mp4", 14100), ("hundred", "mp4", 3000), ("ten-min-mkv", "mkv", 14100), ("hundred-mkv", "mkv", 3000)):
    export = json.load(open(f"{out}/{name}-report.json"))["export"]
    cuts = export["cuts"]
    hidden = [c["hiddenFrames"] for c in cuts]
    again = [c["reencodedFrames"] for c in cuts]
    decoded = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-count_frames", "-show_entries",
                              "stream=nb_read_frames", "-of", "csv=p=0", f"{out}/{name}.{ext}"], capture_output=True, text=True).stdout.strip()
    print(f"{name:<14} {sorted(set(c['method'] for c in cuts))}: re-encoded per edit {min(again)}-{max(again)} frames, "
          f"copied only to decode {min(hidden)}-{max(hidden)} (a GOP is 60); decoded {decoded} of {frames} frames; {export['duration']['seconds']} s")
PY

# LosslessCut's way, and the frames each 100 s output shows at their places.
python3 - "$bin" "$work" "$src" <<'PY'
import subprocess, sys, time
import numpy as np
bin, work, src = sys.argv[1:4]
starts = [60 * i + 12.7 for i in range(10)]
def timed(cmds):
    start = time.perf_counter()
    for cmd in cmds: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start
segments = [["ffmpeg", "-nostdin", "-y", "-v", "error", "-ss", f"{s:.1f}", "-i", src, "-t", "10", "-map", "0", "-c", "copy",
             "-avoid_negative_ts", "make_zero", f"{work}/lc{i}.mp4"] for i, s in enumerate(starts)]
open(f"{work}/lc.txt", "w").write("".join(f"file '{work}/lc{i}.mp4'\n" for i in range(10)))
concat = ["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "concat", "-safe", "0", "-i", f"{work}/lc.txt", "-c", "copy", f"{work}/lc.mp4"]
lc = timed(segments + [concat])
smart = timed([[bin, "run", f"{work}/hundred-smart.json"]])
print(f"hundred-smart vs LosslessCut's way: mediafarm {smart:.3f} s, ffmpeg -ss -c copy x10 + concat {lc:.3f} s (one run)")
def small(path, extra=()):
    raw = subprocess.run(["ffmpeg", "-v", "error", *extra, "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                          "-vf", "scale=64:36:flags=area", "-pix_fmt", "gray", "-f", "rawvideo", "-"], capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, 36, 64).astype(np.float64)
source = small(src)
wanted = np.concatenate([source[round(s * 30):round(s * 30) + 300] for s in starts])
for name, path in (("exact (edit lists)", f"{work}/out/hundred.mp4"), ("smart", f"{work}/out/hundred-smart.mp4"),
                   ("mkv (smart)", f"{work}/out/hundred-mkv.mkv"), ("LosslessCut's way", f"{work}/lc.mp4")):
    got = small(path)
    n = min(len(got), len(wanted))
    mse = np.mean((got[:n] - wanted[:n]) ** 2, axis=(1, 2))
    right = int(np.sum(10 * np.log10(255 ** 2 / np.maximum(mse, 1e-9)) >= 35))
    print(f"{name:<20} {len(got)} frames shown (3000 in the composition), {right} right at their place (FFmpeg decoding)")
PY
