#!/usr/bin/env bash
# Code-scanning benchmark: QR-only scanning of every frame of a 720p movie, end to end (decoding
# included), in milliseconds per frame, beside zbarimg on the same frames extracted as PNG.
#   bench/scan.sh        Target: <= 12 ms per frame without losing recall.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
exec > >(tee bench/results/scan.txt)   # kept beside the script, replaced by each run
script/bootstrap
swift build -c release --product mediafarm >&2
swift build -c release --product mediafarm-engine >&2
bin=$(swift build -c release --show-bin-path)/mediafarm
work=$(mktemp -d /tmp/mediafarm-bench-scan.XXXXXX)
trap 'rm -rf "$work"' EXIT
ff() { ffmpeg -nostdin -y -v error "$@"; }

qrencode -o "$work/qr.png" -s 6 -m 4 "https://mediafarm.invalid/slate/take-7"
frames=300
ff -f lavfi -i testsrc2=s=1280x720:r=30:d=10 -i "$work/qr.png" \
   -filter_complex "[0][1]overlay=x='100+200*sin(t)':y=200" -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p "$work/slate.mp4"
mkdir -p "$work/frames"
ff -i "$work/slate.mp4" "$work/frames/%04d.png"

python3 - "$bin" "$work" "$frames" <<'PY'
import json, statistics, subprocess, sys, time
bin, work, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
def timed(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, out
ours, zbar = [], []
for _ in range(3):
    t, out = timed([bin, "scan", "--json", "--symbologies", "qr", f"{work}/slate.mp4"])
    ours.append(t)
    report = json.loads(out.stdout)[0]
    t, zout = timed(["bash", "-c", f"zbarimg -q --raw {work}/frames/*.png"])
    zbar.append(t)
found_ours = sum(c["frameCount"] for c in report["codes"])
found_zbar = len([l for l in zout.stdout.splitlines() if l.strip()])
mo, mz = statistics.median(ours), statistics.median(zbar)
print(f"mediafarm scan (decode + scan, 1 process): {mo / frames * 1000:6.2f} ms/frame, QR found in {found_ours}/{frames} frames (target <= 12 ms/frame)")
print(f"zbarimg on the same frames as PNG:         {mz / frames * 1000:6.2f} ms/frame, QR found in {found_zbar}/{frames} frames")
print(f"ratio mediafarm/zbarimg: {mo / mz:.3f}")
PY
