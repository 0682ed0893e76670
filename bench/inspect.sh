#!/usr/bin/env bash
# Benchmark: one `mediafarm inspect` over a folder of 100+ media files, against the loop a user would
# otherwise script (one ffprobe per file). Both print JSON for every file; timed by hyperfine in one run.
#   bench/inspect.sh [COPIES]      (default 10 copies of each of 12 generated files, plus Tests/Fixtures/corpus)
# Target: the mediafarm batch takes at most a fifth of the ffprobe loop (ratio <= 0.20).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
exec > >(tee bench/results/inspect.txt)   # kept beside the script, replaced by each run
copies=${1:-10}
script/bootstrap
swift build -c release --product mediafarm >&2
swift build -c release --product mediafarm-engine >&2
bin=$(swift build -c release --show-bin-path)/mediafarm

work=$(mktemp -d /tmp/mediafarm-bench-inspect.XXXXXX)
trap 'rm -rf "$work"' EXIT
src="$work/src"; set_dir="$work/files"; mkdir -p "$src" "$set_dir"
ff() { ffmpeg -nostdin -y -v error "$@"; }
x264=(-c:v libx264 -preset ultrafast -pix_fmt yuv420p)
echo "generating media..." >&2
ff -f lavfi -i testsrc2=s=1280x720:r=30:d=10 -f lavfi -i sine=f=440:sample_rate=48000:d=10 "${x264[@]}" -c:a aac "$src/hd720.mp4"
ff -f lavfi -i testsrc2=s=640x360:r=25:d=6 -f lavfi -i sine=f=330:d=6 "${x264[@]}" -c:a aac "$src/sd.mov"
ff -f lavfi -i testsrc2=s=640x360:r=60:d=5 -f lavfi -i sine=d=5 "${x264[@]}" -c:a libopus "$src/clip.mkv"
ff -f lavfi -i testsrc2=s=320x240:r=30:d=8 -c:v libvpx-vp9 -deadline realtime -cpu-used 8 "$src/web.webm"
ff -f lavfi -i testsrc2=s=320x240:r=30:d=4 -vf "select='lt(n,60)+not(mod(n,3))'" -vsync vfr "${x264[@]}" "$src/vfr.mp4"
ff -f lavfi -i testsrc2=s=640x360:r=25:d=5 -f lavfi -i sine=d=5 -c:v mpeg2video -c:a mp2 "$src/broadcast.ts"
ff -f lavfi -i sine=f=1000:d=30 -c:a aac "$src/podcast.m4a"
ff -f lavfi -i sine=f=500:d=20 -c:a libmp3lame "$src/song.mp3"
ff -f lavfi -i sine=f=200:d=10 -c:a flac "$src/master.flac"
ff -f lavfi -i sine=f=300:d=5 -c:a pcm_s16le "$src/take.wav"
ff -f lavfi -i testsrc2=s=1920x1080:r=24:d=3 "${x264[@]}" -movflags +faststart "$src/hd1080.mp4"
ff -f lavfi -i testsrc2=s=320x240:r=15:d=6 -c:v mpeg4 "$src/old.avi"
for i in $(seq 1 "$copies"); do
  for f in "$src"/*; do cp "$f" "$set_dir/$(printf '%03d' "$i")-$(basename "$f")"; done
done
cp Tests/Fixtures/corpus/*_*.* "$set_dir/"
count=$(ls "$set_dir" | wc -l)
echo "files: $count" >&2

cat > "$work/ffprobe-loop.sh" <<LOOP
for f in "$set_dir"/*; do ffprobe -v error -show_format -show_streams -show_chapters -of json "\$f" > /dev/null || true; done
LOOP
hyperfine --warmup 1 --runs 5 -N --ignore-failure --export-json "$work/result.json" \
  -n "mediafarm inspect (1 process, $count files)" "$bin inspect --json $set_dir" \
  -n "ffprobe loop ($count processes)" "bash $work/ffprobe-loop.sh" >&2
python3 - "$work/result.json" "$count" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
ours, theirs = r[0]["mean"], r[1]["mean"]
print(f"files: {sys.argv[2]}")
print(f"mediafarm inspect: {ours*1000:.0f} ms  ({ours/int(sys.argv[2])*1000:.2f} ms/file)")
print(f"ffprobe loop:      {theirs*1000:.0f} ms  ({theirs/int(sys.argv[2])*1000:.2f} ms/file)")
print(f"ratio mediafarm/ffprobe: {ours/theirs:.3f}  (target <= 0.20)")
PY
