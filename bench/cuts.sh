#!/usr/bin/env bash
# Exact cuts in passthrough (issue "exact cuts"): ten edits starting between keyframes, taken from ten
# minutes of 1080p H.264 with B-frames and a keyframe every 2 s, against what a user would otherwise run:
#   bench/cuts.sh                 (about 10 minutes on 2 cores; media generated once into /tmp)
# 1. Time against `ffmpeg -c copy` of the same total duration (goal: ratio <= 1.5).
# 2. Time against a full re-encode of the same ten edits (ffmpeg, libx264 veryfast, crf 20; goal <= 0.1).
# 3. Frames re-encoded per cut (goal: at most one GOP; edit lists need none) and frames copied only to
#    be decoded (hidden by the edit list), from the export report.
# Also times faststart (the index moved to the front, the whole file rewritten once) separately.
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

# Ten 10-second edits, one per minute, each starting 0.7 s after a keyframe (21 frames in).
python3 - "$src" "$work" <<'PY'
import json, sys
src, work = sys.argv[1:3]
edits = [{"source": src, "start": f"{60 * i + 12.7:.1f}", "duration": "10"} for i in range(10)]
for name, faststart in (("cuts", False), ("cuts-faststart", True)):
    json.dump({"version": 1, "edits": edits, "overwrite": True, "report": f"out/{name}-report.json",
               "export": {"mode": "passthrough", "output": f"out/{name}.mp4", "faststart": faststart}},
              open(f"{work}/{name}.json", "w"))
# The same ten edits re-encoded by ffmpeg: trim + concat in one filter graph.
parts = "".join(f"[0:v]trim=start={60 * i + 12.7:.1f}:duration=10,setpts=PTS-STARTPTS[v{i}];"
                f"[0:a]atrim=start={60 * i + 12.7:.1f}:duration=10,asetpts=PTS-STARTPTS[a{i}];" for i in range(10))
graph = parts + "".join(f"[v{i}][a{i}]" for i in range(10)) + "concat=n=10:v=1:a=1[v][a]"
open(f"{work}/graph.txt", "w").write(graph)
PY

runs=${RUNS:-3}
echo
bench/compare.py "10 exact cuts, 100 s out" 1.5 "$runs" "$bin run $work/cuts.json" "ffmpeg -c copy" \
  "ffmpeg -nostdin -y -v error -i $src -t 100 -map 0 -c copy $work/ff-copy.mp4"
bench/compare.py "same, with faststart" 1.5 "$runs" "$bin run $work/cuts-faststart.json" "ffmpeg +faststart" \
  "ffmpeg -nostdin -y -v error -i $src -t 100 -map 0 -c copy -movflags +faststart $work/ff-copy-fs.mp4"
bench/compare.py "10 exact cuts vs re-encode" 0.1 1 "$bin run $work/cuts.json" "ffmpeg x264 veryfast" \
  "ffmpeg -nostdin -y -v error -i $src -filter_complex_script $work/graph.txt -map [v] -map [a] -c:v libx264 -preset veryfast -crf 20 -c:a aac $work/ff-reencode.mp4"

python3 - "$work/out/cuts-report.json" "$work/out/cuts.mp4" <<'PY'
import json, subprocess, sys
report = json.load(open(sys.argv[1]))
export = report.get("export", report)
cuts = export["cuts"]
hidden = [c["hiddenFrames"] for c in cuts]
print(f"{'per cut':<28} frames re-encoded: 0 (methods: {sorted(set(c['method'] for c in cuts))}); "
      f"frames copied only for decoding: min {min(hidden)}, max {max(hidden)} (a GOP is 60)")
frames = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-count_frames", "-show_entries",
                         "stream=nb_read_frames", "-of", "csv=p=0", sys.argv[2]], capture_output=True, text=True).stdout.strip()
print(f"{'decoded output':<28} {frames} frames (the composition has 3000); report duration {export['duration']}")
PY
