#!/usr/bin/python3
# Another independent reader for cut outputs: plays a movie in headless Firefox ESR (its own demuxers
# for MP4 and Matroska, decoding through the system's FFmpeg) and prints, as JSON, what chromium-play.py
# prints: the duration read from the header ("duration"), the duration once playback has ended
# ("endedDuration"), and the media time of every frame presented (requestVideoFrameCallback); or
# {"error": ...}.
#   firefox-play.py MOVIE [--rate R]
# The page is a file: page; it sends its result to a loopback HTTP listener of this script. Firefox is
# told never to skip decoding to the next keyframe when it falls behind (a busy machine): every frame is
# decoded, and one late is dropped after decoding, as Chromium does.
import http.server, json, os, shutil, subprocess, sys, tempfile, threading

PAGE = """<!doctype html><html><body><video id=v muted playsinline></video><script>
const v = document.getElementById('v');
const times = []; let duration = null, sent = false;
function send(result) { if (sent) return; sent = true;
  fetch('http://127.0.0.1:PORT/result', {method: 'POST', body: JSON.stringify(result)}); }
v.onloadedmetadata = () => { duration = v.duration; };
function onFrame(now, m) { times.push(m.mediaTime); v.requestVideoFrameCallback(onFrame); }
v.requestVideoFrameCallback(onFrame);
v.onended = () => { const q = v.getVideoPlaybackQuality();
  send({duration, endedDuration: v.duration, times, decoded: q.totalVideoFrames, dropped: q.droppedVideoFrames}); };
v.onerror = () => send({error: 'media error ' + (v.error && (v.error.code + ': ' + v.error.message))});
v.playbackRate = RATE;
v.src = 'movie' + EXT;
v.play().catch(e => send({error: String(e)}));
</script></body></html>"""

PREFS = """user_pref("media.autoplay.default", 0);
user_pref("media.autoplay.blocking_policy", 0);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("app.update.auto", false);
user_pref("media.hevc.enabled", true);
user_pref("media.decoder.skip-to-next-key-frame.enabled", false);
"""

def main():
    movie = os.path.abspath(sys.argv[1])
    rate = float(sys.argv[sys.argv.index("--rate") + 1]) if "--rate" in sys.argv else 1.0
    folder = tempfile.mkdtemp(prefix="mediafarm-firefox-")
    result = {}
    done = threading.Event()

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            result["text"] = body.decode()
            self.send_response(204); self.send_header("Access-Control-Allow-Origin", "*"); self.end_headers()
            done.set()
        def log_message(self, *args): pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ext = os.path.splitext(movie)[1]
        os.symlink(movie, os.path.join(folder, "movie" + ext))
        with open(os.path.join(folder, "play.html"), "w") as f:
            f.write(PAGE.replace("RATE", repr(rate)).replace("EXT", json.dumps(ext)).replace("PORT", str(server.server_port)))
        profile = os.path.join(folder, "profile")
        os.mkdir(profile)
        with open(os.path.join(profile, "user.js"), "w") as f:
            f.write(PREFS)
        env = dict(os.environ, MOZ_HEADLESS="1")
        firefox = subprocess.Popen(["firefox-esr", "--headless", "--no-remote", "--profile", profile,
                                    f"file://{folder}/play.html"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            if not done.wait(180):
                print(json.dumps({"error": "playback did not end within 180 s"})); return 1
            print(result["text"]); return 0
        finally:
            firefox.kill(); firefox.wait()
    finally:
        server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)

sys.exit(main())
