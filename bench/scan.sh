#!/usr/bin/env bash
# Code-scanning benchmark: QR-only scanning of every frame of two 720p movies, end to end (decoding
# included), in milliseconds per frame, beside zbarimg on the same frames extracted as PNG:
#   clean  a moving QR code over testsrc2 (a clean, cheaply coded picture);
#   noisy  the same with sensor-like noise (temporal and uniform, strength 20), as a dim camera gives:
#          about 50 Mb/s of H.264, where decoding costs more than scanning.
# zbarimg runs twice on each: as a script runs it (every symbology, its default) and told to look for QR
# codes only (-Sdisable -Sqrcode.enable), the like-for-like comparison.
#   bench/scan.sh        Targets: <= 12 ms per frame (clean) without losing recall; noisy <= 0.2 x zbarimg.
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
for clip in clean noisy; do
  noise=""
  [ "$clip" = noisy ] && noise="noise=alls=20:allf=t+u,"
  ff -f lavfi -i testsrc2=s=1280x720:r=30:d=10 -i "$work/qr.png" \
     -filter_complex "[0]${noise}null[bg];[bg][1]overlay=x='100+200*sin(t)':y=200" \
     -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p "$work/$clip.mp4"
  mkdir -p "$work/$clip"
  ff -i "$work/$clip.mp4" "$work/$clip/%04d.png"
done

python3 - "$bin" "$work" <<'PY'
import glob, json, statistics, subprocess, sys, time
bin, work = sys.argv[1], sys.argv[2]
def timed(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, out
for clip in ["clean", "noisy"]:
    frames = len(glob.glob(f"{work}/{clip}/*.png"))
    movie = f"{work}/{clip}.mp4"
    print(f"== {clip}: 1280x720, {frames} frames, {__import__('os').path.getsize(movie) * 8 / 10 / 1e6:.0f} Mb/s H.264")
    ours, zbar, zbar_qr = [], [], []
    for _ in range(3):
        t, out = timed([bin, "scan", "--json", "--symbologies", "qr", movie])
        if out.returncode != 0:
            sys.exit(f"mediafarm scan failed: {out.stderr}")
        ours.append(t)
        report = json.loads(out.stdout)[0]
        t, zout = timed(["bash", "-c", f"zbarimg -q --raw {work}/{clip}/*.png 2>/dev/null"])
        zbar.append(t)
        t, qout = timed(["bash", "-c", f"zbarimg -q --raw -Sdisable -Sqrcode.enable {work}/{clip}/*.png 2>/dev/null"])
        zbar_qr.append(t)
    found = sum(c["frameCount"] for c in report["codes"])
    lines = lambda out: len([l for l in out.stdout.splitlines() if l.strip()])
    mo, mz, mq = statistics.median(ours), statistics.median(zbar), statistics.median(zbar_qr)
    print(f"mediafarm scan --symbologies qr (decode + scan, 1 process): {mo / frames * 1000:7.2f} ms/frame, QR found in {found}/{frames} frames")
    print(f"zbarimg on the same frames as PNG (every symbology):         {mz / frames * 1000:7.2f} ms/frame, QR found in {lines(zout)}/{frames} frames")
    print(f"zbarimg -Sdisable -Sqrcode.enable (QR only):                  {mq / frames * 1000:7.2f} ms/frame, QR found in {lines(qout)}/{frames} frames")
    print(f"ratio mediafarm/zbarimg: {mo / mz:.3f}; mediafarm/zbarimg QR only: {mo / mq:.3f}")
PY
