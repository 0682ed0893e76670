#!/usr/bin/python3
# The readers' table: which players show exactly what a cut output holds. Cuts seven edits (135 frames
# at 25 fps, every edit starting and ending between keyframes) out of three sources (H.264 with
# B-frames and 2 s GOPs, HEVC with open GOPs, VP9), with "cuts": "exact" and "smart" into mp4, mov and
# mkv, then plays every output in every reader installed here and compares what each presents with the
# composition:
#   ffmpeg     FFmpeg's demuxers and decoders (what mpv and most tools use): every decoded frame
#   gstreamer  GStreamer 1.22's qtdemux / matroskademux, avdec_* decoders: every presented frame
#   chromium   headless Chromium, requestVideoFrameCallback: the media time of every presented frame
#   firefox    headless Firefox ESR, the same
#   vlc        VLC's own mp4 and mkv demuxers, every displayed frame saved by its scene filter; the
#              duration from libvlc (python3-vlc). VLC refuses to run as root: as root, it runs as nobody
# Frames are compared by content where the reader gives pictures (each must be within 35 dB of the
# composition's frame at its place; re-encoded frames are >= 40 dB from theirs, neighbouring source
# frames far below), by presentation time where it gives times (browsers). Durations: from the header.
#   bench/readers.py MEDIAFARM [--json OUT] [--only SOURCE]
# Prints a markdown table: output kind x reader -> exact / frames wrong / duration wrong.
import json, os, re, shutil, subprocess, sys, tempfile
import numpy as np

FPS = 25
EDITS = [(13, 20), (61, 15), (88, 30), (140, 12), (171, 25), (199, 18), (230, 15)]
W, H = 320, 240
SOURCES = {
    "H.264 B-frames": (["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2",
                        "-x264-params", "keyint=50:min-keyint=50:scenecut=0:b-adapt=0", "-c:a", "aac"], "mp4"),
    "HEVC open GOP": (["-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1",
                       "-x265-params", "keyint=50:min-keyint=50:scenecut=0:bframes=3:log-level=error", "-c:a", "aac"], "mp4"),
    "VP9": (["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "50", "-keyint_min", "50",
             "-b:v", "1M", "-c:a", "libopus"], "webm"),
}
OUTPUTS = [("exact", "mp4"), ("exact", "mov"), ("smart", "mp4"), ("smart", "mov"), ("smart", "mkv")]
READERS = ["ffmpeg", "gstreamer", "chromium", "firefox", "vlc"]
HERE = os.path.dirname(os.path.abspath(__file__))
READER_SCRIPTS = os.path.join(HERE, "..", "Tests", "Readers")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, **kw)


def luma_frames(data):
    """The Y planes of raw I420 frames (each reader's own pixels, no range conversion between them)."""
    size = W * H * 3 // 2
    n = len(data) // size
    return np.frombuffer(data[:n * size], dtype=np.uint8).reshape(n, size)[:, :W * H].reshape(n, H, W).astype(np.float64)


def psnr(a, b):
    mse = np.mean((a - b) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255 * 255 / mse)


def compare_pictures(frames, wanted, source):
    """(right, first wrong index or None)"""
    if len(frames) != len(wanted):
        bad = next((i for i in range(min(len(frames), len(wanted))) if psnr(frames[i], source[wanted[i]]) < 35), min(len(frames), len(wanted)))
        return False, bad
    for i, w in enumerate(wanted):
        if psnr(frames[i], source[w]) < 35:
            return False, i
    return True, None


def expected_times(src):
    """When each wanted frame is presented in the output: its time in its source (from the container's
    start, as MediaFarm counts source time) less its edit's start, plus the edits before it."""
    start = float(run(["ffprobe", "-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", src]).stdout.decode().strip() or 0)
    pts = sorted(float(t) for t in run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
                                         "-of", "csv=p=0", src]).stdout.decode().split() if t.replace(".", "").replace("-", "").isdigit())
    times, offset = [], 0.0
    for first, length in EDITS:
        times += [offset + (pts[f] - start) - first / FPS for f in range(first, first + length)]
        offset += length / FPS
    # A first frame after the composition's start (WebM with Opus: video 14 ms after the edit's start)
    # is shown from the start: edit lists begin at it, smart rendering places it there.
    times[0] = min(times[0], 0.0)
    return times


def compare_times(times, expected, mkv, sampled=False, decoded=None):
    """Presented media times against 0, 1/25, ...; Matroska starts up to 21.4 ms late (the encoded AAC's
    priming, which FFmpeg 5.1's Matroska muxer moves to zero). `sampled`: the reader reports only some
    presented frames (headless Firefox calls back for about five in six, at any playback rate): every
    time reported must then be a frame time of the composition, in order, first and last included, and
    the frames it decoded (getVideoPlaybackQuality, none dropped) must be the composition's count."""
    count = len(expected)
    if not times:
        return False, 0
    # Matroska: everything may start up to 21.4 ms late (the priming of the encoded AAC).
    late = times[0] - expected[0]
    if not (-0.002 <= late <= (0.0215 if mkv else 0.002)):
        return False, 0
    if not sampled:
        if len(times) != count:
            return False, min(len(times), count)
        for i, t in enumerate(times):
            if abs(t - late - expected[i]) > 0.002:
                return False, i
        return True, None
    k = 0
    for i, t in enumerate(times):
        while k < count and expected[k] < t - late - 0.002:
            k += 1
        if k == count or abs(t - late - expected[k]) > 0.002:
            return False, i
        k += 1
    if k != count or decoded != count:
        return False, len(times)
    return True, None


def ffmpeg_reader(path):
    frames = run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough", "-pix_fmt", "yuv420p",
                  "-f", "rawvideo", "-"]).stdout
    d = run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]).stdout.decode().strip()
    return {"frames": luma_frames(frames), "duration": float(d) if d else None}


def gstreamer_reader(path):
    demux = "matroskademux" if path.endswith((".mkv", ".webm")) else "qtdemux"
    try:
        r = run(["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", demux, "!", "queue", "!", "decodebin", "!",
                 "videoconvert", "!", "video/x-raw,format=I420", "!", "fdsink", "fd=1", "sync=false"], timeout=120)
    except subprocess.TimeoutExpired:
        return {"error": "hangs (no end of stream within 120 s)"}
    if r.returncode != 0:
        return {"error": r.stderr.decode()[-300:]}
    d = run(["gst-discoverer-1.0", path]).stdout.decode()
    m = re.search(r"Duration: (\d+):(\d+):(\d+\.\d+)", d)
    duration = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3]) if m else None
    return {"frames": luma_frames(r.stdout), "duration": duration}


def browser_reader(script, path):
    r = run(["/usr/bin/python3", os.path.join(READER_SCRIPTS, script), path, "--rate", "0.5"])
    try:
        j = json.loads(r.stdout.decode().strip().splitlines()[-1])
    except Exception:
        return {"error": (r.stdout + r.stderr).decode()[-300:]}
    if "error" in j:
        return {"error": j["error"]}
    return {"times": j.get("times", []), "duration": j.get("duration"), "decoded": j.get("decoded"),
            "sampled": script.startswith("firefox")}


def vlc_reader(path):
    """VLC will not run as root: it runs as nobody, into a folder it may write."""
    folder = tempfile.mkdtemp(prefix="mediafarm-vlc-")
    os.chmod(folder, 0o777)
    try:
        movie = os.path.join(folder, "movie" + os.path.splitext(path)[1])
        shutil.copyfile(path, movie)
        os.chmod(movie, 0o644)
        args = ["cvlc", "-I", "dummy", "--no-audio", "--vout=dummy", "--video-filter=scene", "--scene-format=png",
                "--scene-ratio=1", "--scene-prefix=f", f"--scene-path={folder}", "--no-drop-late-frames", "--no-skip-frames",
                "--play-and-exit", movie]
        if os.geteuid() == 0:
            args = ["runuser", "-u", "nobody", "--"] + args
        run(args, timeout=300)
        pngs = sorted(f for f in os.listdir(folder) if f.startswith("f") and f.endswith(".png"))
        if not pngs:
            return {"error": "VLC showed no frame"}
        frames = run(["ffmpeg", "-v", "error", "-framerate", "25", "-i", os.path.join(folder, "f%05d.png"), "-pix_fmt", "yuv420p",
                      "-vf", f"scale={W}:{H}", "-f", "rawvideo", "-"]).stdout
        # The duration VLC's demuxer gives (libvlc, milliseconds).
        probe = ["/usr/bin/python3", "-c", VLC_DURATION, movie]
        if os.geteuid() == 0:
            probe = ["runuser", "-u", "nobody", "--"] + probe
        d = run(probe, timeout=60).stdout.decode().strip().splitlines()
        duration = int(d[-1]) / 1000 if d and d[-1].lstrip("-").isdigit() and int(d[-1]) > 0 else None
        return {"frames": luma_frames(frames), "duration": duration}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


VLC_DURATION = """
import sys, time, vlc
media = vlc.Instance("--no-audio", "--vout=dummy", "--intf=dummy").media_new(sys.argv[1])
media.parse_with_options(vlc.MediaParseFlag.local, 10000)
for _ in range(200):
    if media.get_parsed_status() == vlc.MediaParsedStatus.done: break
    time.sleep(0.05)
print(media.get_duration())
"""


def read(reader, path):
    if reader == "ffmpeg": return ffmpeg_reader(path)
    if reader == "gstreamer": return gstreamer_reader(path)
    if reader == "chromium": return browser_reader("chromium-play.py", path)
    if reader == "firefox": return browser_reader("firefox-play.py", path)
    return vlc_reader(path)


def verdict(result, wanted, source, duration, mkv, expected):
    if "error" in result:
        return {"verdict": "does not play", "detail": result["error"].strip().splitlines()[-1][:160] if result["error"].strip() else ""}
    if "frames" in result:
        ok, bad = compare_pictures(result["frames"], wanted, source)
        shown = len(result["frames"])
    else:
        ok, bad = compare_times(result["times"], expected, mkv, result.get("sampled", False), result.get("decoded"))
        shown = result["decoded"] if result.get("sampled") else len(result["times"])
        if shown == 0:
            return {"verdict": "shows no video", "detail": "plays, presents no frame (no decoder for the codec)", "duration": result.get("duration")}
    out = {"shown": shown, "wanted": len(wanted), "duration": result.get("duration")}
    if not ok:
        out["verdict"] = "frames wrong"
        out["detail"] = f"{shown} of {len(wanted)} frames, wrong from the {bad + 1}th" if bad is not None else f"{shown} of {len(wanted)} frames"
    elif result.get("duration") is not None and abs(result["duration"] - duration) >= 1 / FPS:
        out["verdict"] = "duration wrong"
        out["detail"] = f"{result['duration']:.3f} s, the composition lasts {duration:.3f} s"
    else:
        out["verdict"] = "exact" if result.get("duration") is not None else "exact (frames; no duration)"
    return out


def main():
    mediafarm = sys.argv[1]
    json_out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    readers = sys.argv[sys.argv.index("--readers") + 1].split(",") if "--readers" in sys.argv else READERS
    work = tempfile.mkdtemp(prefix="mediafarm-readers-")
    wanted = [f for start, length in EDITS for f in range(start, start + length)]
    duration = len(wanted) / FPS
    rows = []
    try:
        for name, (codec, ext) in SOURCES.items():
            if only and only != name: continue
            src = os.path.join(work, re.sub(r"\W+", "-", name.lower()) + "." + ext)
            subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", f"testsrc2=s={W}x{H}:r={FPS}:d=10",
                            "-f", "lavfi", "-i", "sine=f=440:sample_rate=48000:d=10"] + codec + ["-pix_fmt", "yuv420p", "-ac", "2", src], check=True)
            source = luma_frames(run(["ffmpeg", "-v", "error", "-i", src, "-map", "0:v:0", "-fps_mode", "passthrough",
                                      "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"]).stdout)
            expected = expected_times(src)
            for cuts, container in OUTPUTS:
                if container == "mov" and "VP9" in name:
                    continue  # FFmpeg writes VP9 (and AV1) to mp4 and mkv only
                kind = f"{name}, {cuts}, {container}"
                out = os.path.join(work, f"{os.path.basename(src)}-{cuts}.{container}")
                manifest = {"version": 1, "edits": [{"source": src, "start": f"{s}/{FPS}", "duration": f"{n}/{FPS}"} for s, n in EDITS],
                            "export": {"mode": "passthrough", "output": out, "cuts": cuts}}
                mpath = out + ".json"
                json.dump(manifest, open(mpath, "w"))
                r = run([mediafarm, "run", "--json", mpath], env=dict(os.environ, MEDIAFARM_OUTPUT_ROOTS=work))
                if not os.path.exists(out):
                    rows.append({"output": kind, "error": r.stderr.decode().strip().splitlines()[-1] if r.stderr else "no output"})
                    print(f"{kind}: not written: {rows[-1]['error']}", file=sys.stderr)
                    continue
                row = {"output": kind, "readers": {}}
                for reader in readers:
                    row["readers"][reader] = verdict(read(reader, out), wanted, source, duration, container == "mkv", expected)
                    print(f"{kind} / {reader}: {row['readers'][reader]}", file=sys.stderr)
                rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| output | " + " | ".join(readers) + " |")
    print("|---|" + "---|" * len(readers))
    for row in rows:
        if "error" in row:
            print(f"| {row['output']} | " + " | ".join(["not written"] * len(readers)) + " |")
            continue
        cells = []
        for reader in readers:
            v = row["readers"][reader]
            cells.append(v["verdict"] + (f" ({v['detail']})" if v.get("detail") else ""))
        print(f"| {row['output']} | " + " | ".join(cells) + " |")
    if json_out:
        json.dump({"edits": EDITS, "fps": FPS, "frames": len(wanted), "rows": rows}, open(json_out, "w"), indent=1)


if __name__ == "__main__":
    main()
