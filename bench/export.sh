#!/usr/bin/env bash
# Export benchmarks: MediaFarm against the command a user would otherwise script, side by side in one
# run (interleaved runs, medians: bench/compare.py), plus the peak memory of a long passthrough.
#   RUNS=5 bench/export.sh     (about 8 minutes on 2 cores; media is generated once into /tmp)
# Targets: passthrough 60 s 1080p vs ffmpeg -c copy: ratio <= 1.2; constant frame rate 720p vs the same
# ffmpeg encode: <= 1.0; spectral stretch of 60 s stereo 48 kHz by 0.5 vs rubberband -3 -t 2: <= 1.0;
# peak resident memory of a 10-minute 1080p passthrough: under 200 MB.
set -euo pipefail
source "$(dirname "$0")/setup.sh" export
if [ ! -f "$media/1080p-60s.mp4" ]; then
  echo "generating 60 s of 1080p..." >&2
  ff -f lavfi -i testsrc2=s=1920x1080:r=30:d=60 -f lavfi -i sine=f=440:sample_rate=48000:d=60 \
     -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 60 -c:a aac -ac 2 "$media/1080p-60s.mp4"
fi
if [ ! -f "$media/720p-30s.mp4" ]; then
  echo "generating 30 s of 720p..." >&2
  ff -f lavfi -i testsrc2=s=1280x720:r=30:d=30 -f lavfi -i sine=f=440:sample_rate=48000:d=30 \
     -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -ac 2 "$media/720p-30s.mp4"
fi
[ -f "$media/stereo-60s.wav" ] || ff -f lavfi -i "sine=f=440:sample_rate=48000:d=60" -f lavfi -i "sine=f=660:sample_rate=48000:d=60" \
  -filter_complex "[0][1]amerge=inputs=2" -c:a pcm_s16le "$media/stereo-60s.wav"
if [ ! -f "$media/1080p-10min.mp4" ]; then
  for i in $(seq 10); do echo "file '$media/1080p-60s.mp4'"; done > "$media/ten.txt"
  ff -f concat -safe 0 -i "$media/ten.txt" -c copy "$media/1080p-10min.mp4"
fi

manifest() { # name input export-json
  printf '{ "version": 1, "input": "%s", %s "export": %s, "overwrite": true }\n' "$2" "${4:-}" "$3" > "$work/$1.json"
}
manifest passthrough "$media/1080p-60s.mp4" '{ "mode": "passthrough", "output": "out/pass.mp4", "faststart": false }'
manifest cfr "$media/720p-30s.mp4" '{ "mode": "constantFrameRate", "output": "out/cfr.mp4", "frameRate": 30, "video": { "crf": 20, "preset": "veryfast" }, "audio": { "bitrate": 128000 }, "faststart": false }'
manifest stretch "$media/stereo-60s.wav" '{ "mode": "passthrough", "output": "out/stretch.mp4", "faststart": false }' \
  '"scale": [ { "start": 0, "duration": 60, "rate": 0.5 } ], "audio": { "timePitch": "spectral" },'
manifest long "$media/1080p-10min.mp4" '{ "mode": "passthrough", "output": "out/long.mp4", "faststart": false }'
export MEDIAFARM_OUTPUT_ROOTS="$work"

runs=${RUNS:-5}
echo
bench/compare.py "passthrough 1080p 60 s" 1.2 "$runs" "$bin run $work/passthrough.json" "ffmpeg -c copy" \
  "ffmpeg -nostdin -y -v error -i $media/1080p-60s.mp4 -map 0 -c copy $work/ff-pass.mp4"
bench/compare.py "constant frame rate 720p" 1.0 "$runs" "$bin run $work/cfr.json" "ffmpeg fps+x264" \
  "ffmpeg -nostdin -y -v error -i $media/720p-30s.mp4 -vf fps=30 -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 128k $work/ff-cfr.mp4"
bench/compare.py "spectral stretch 60 s x2" 1.0 "$runs" "$bin run $work/stretch.json" "rubberband -3" \
  "rubberband -q -3 -t 2 $media/stereo-60s.wav $work/rb.wav"

python3 - "$bin" "$work/long.json" <<'PY'
import resource, subprocess, sys, time
start = time.time()
subprocess.run([sys.argv[1], "run", sys.argv[2]], check=True, stdout=subprocess.DEVNULL)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{'passthrough 1080p 10 min':<28} peak resident memory {peak:.0f} MB in {time.time()-start:.1f} s  (target < 200 MB)")
PY
