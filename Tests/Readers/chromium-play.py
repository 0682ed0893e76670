#!/usr/bin/python3
# A second, independent reader for exact-cut tests: plays a movie in headless Chromium (its own media
# pipeline, demuxer and renderer) and prints, as JSON, the duration it reports once it has read the
# movie's header ("duration") and when playback has ended ("endedDuration": Chromium extends it to the
# last decoded audio or video), and the media time of every frame it presents
# (HTMLVideoElement.requestVideoFrameCallback); or {"error": ...}.
#   chromium-play.py MOVIE [--rate R]
#   chromium-play.py PACKAGE_FOLDER [--rate R]
#   chromium-play.py --console PAGE_URL VIDEO_ID [--choose VALUE] [--header "Name: value"] [--rate R]
# The third plays the <video id=VIDEO_ID> of a page of the farm's console as it is served (its own script and
# policy), after choosing VALUE in the page's select.rendition when given; the JSON adds the source played ("src").
# Playback runs in real time divided by R (default 1). A streaming package (a folder with master.m3u8) is
# served over HTTP on 127.0.0.1, as a player fetches it, and played by Chromium's native HLS; the JSON then
# also lists every path fetched ("fetched"), in order.
import functools, http.server, json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request
import rangeserve  # noqa: E402 (beside this script)
import websocket  # python3-websocket

PAGE = """<!doctype html><html><body><video id=v muted playsinline></video><pre id=out>pending</pre><script>
const v = document.getElementById('v'), out = document.getElementById('out');
const times = []; let duration = null;
v.onloadedmetadata = () => { duration = v.duration; };
function onFrame(now, m) { times.push(m.mediaTime); v.requestVideoFrameCallback(onFrame); }
v.requestVideoFrameCallback(onFrame);
v.onended = () => { const q = v.getVideoPlaybackQuality();
  out.textContent = JSON.stringify({duration, endedDuration: v.duration, times, decoded: q.totalVideoFrames, dropped: q.droppedVideoFrames}); };
v.onerror = () => { out.textContent = JSON.stringify({error: 'media error ' + (v.error && (v.error.code + ': ' + v.error.message))}); };
v.playbackRate = RATE;
v.src = SRC;
v.play().catch(e => { out.textContent = JSON.stringify({error: String(e)}); });
</script></body></html>"""

CONSOLE = """(function () {
  const v = document.getElementById(VID); window.__mediafarm = 'pending';
  if (!v) { window.__mediafarm = JSON.stringify({error: 'the page has no video ' + VID}); return; }
  const times = []; v.muted = true;
  function onFrame(now, m) { times.push(m.mediaTime); v.requestVideoFrameCallback(onFrame); }
  v.requestVideoFrameCallback(onFrame);
  v.onended = () => { const q = v.getVideoPlaybackQuality();
    window.__mediafarm = JSON.stringify({duration: v.duration, times, decoded: q.totalVideoFrames, dropped: q.droppedVideoFrames, src: v.currentSrc}); };
  v.onerror = () => { window.__mediafarm = JSON.stringify({error: 'media error ' + (v.error && (v.error.code + ': ' + v.error.message))}); };
  const choose = CHOOSE, select = document.querySelector('select.rendition');
  if (choose) {
    if (!select) { window.__mediafarm = JSON.stringify({error: 'the page has no rendition switcher'}); return; }
    select.value = choose; select.dispatchEvent(new Event('change'));
  }
  v.playbackRate = RATE;
  v.play().catch(e => { window.__mediafarm = JSON.stringify({error: String(e)}); });
})()"""


def until(seconds):
    """Yields until `seconds` have passed (the caller breaks out once what it waits for is there)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        yield


def package_server(root, page, fetched):
    """An HTTP server on a free loopback port for the package at `root`, with the player's page at
    /.mediafarm-play.html; each path fetched is appended to `fetched`."""
    class Handler(rangeserve.RangeHandler):
        def do_GET(self):
            if self.path == "/.mediafarm-play.html":
                body = page.encode()
                self.send_response(200); self.send_header("Content-Type", "text/html"); self.send_header("Content-Length", str(len(body)))
                self.end_headers(); self.wfile.write(body); return
            fetched.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass
    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=root))


def main():
    console = sys.argv[1] == "--console"
    movie = sys.argv[2] if console else os.path.abspath(sys.argv[1])
    rate = float(sys.argv[sys.argv.index("--rate") + 1]) if "--rate" in sys.argv else 1.0
    folder = tempfile.mkdtemp(prefix="mediafarm-chromium-")
    server, fetched = None, []
    try:
        if console:
            address = movie
        elif os.path.isdir(movie):
            page = PAGE.replace("RATE", repr(rate)).replace("SRC", json.dumps("master.m3u8"))
            server = package_server(movie, page, fetched)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            address = f"http://127.0.0.1:{server.server_address[1]}/.mediafarm-play.html"
        else:
            ext = os.path.splitext(movie)[1]
            os.symlink(movie, os.path.join(folder, "movie" + ext))
            with open(os.path.join(folder, "play.html"), "w") as f:
                f.write(PAGE.replace("RATE", repr(rate)).replace("SRC", json.dumps("movie" + ext)))
            address = f"file://{folder}/play.html"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        chrome = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio",
                                   f"--user-data-dir={folder}/profile", "--autoplay-policy=no-user-gesture-required",
                                   "--allow-file-access-from-files", f"--remote-debugging-port={port}", "about:blank"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            targets = None
            for _ in until(120):  # a limit on a browser that never starts, not on its speed
                try:
                    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json")); break
                except Exception:
                    time.sleep(0.1)
            if targets is None:
                print(json.dumps({"error": "chromium did not start"})); return 1
            page = [t for t in targets if t["type"] == "page"][0]
            ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True, timeout=30)
            ids = [0]
            def call(method, **params):
                ids[0] += 1
                ws.send(json.dumps({"id": ids[0], "method": method, "params": params}))
                while True:
                    reply = json.loads(ws.recv())
                    if reply.get("id") == ids[0]: return reply
            if "--header" in sys.argv:
                name, value = sys.argv[sys.argv.index("--header") + 1].split(":", 1)
                call("Network.enable")
                call("Network.setExtraHTTPHeaders", headers={name.strip(): value.strip()})
            call("Page.navigate", url=address)
            if console:
                for _ in until(60):
                    r = call("Runtime.evaluate", expression="document.readyState")
                    if r.get("result", {}).get("result", {}).get("value") == "complete": break
                    time.sleep(0.1)
                choose = sys.argv[sys.argv.index("--choose") + 1] if "--choose" in sys.argv else None
                call("Runtime.evaluate", expression=CONSOLE.replace("VID", json.dumps(sys.argv[3])).replace("CHOOSE", json.dumps(choose))
                     .replace("RATE", repr(rate)))
            probe = "window.__mediafarm || 'pending'" if console else \
                "document.getElementById('out') ? document.getElementById('out').textContent : 'pending'"
            deadline = time.time() + 120
            while time.time() < deadline:
                r = call("Runtime.evaluate", expression=probe)
                value = r.get("result", {}).get("result", {}).get("value")
                if value and value != "pending":
                    out = json.loads(value)
                    if server:
                        out["fetched"] = fetched
                    print(json.dumps(out)); return 0
                time.sleep(0.2)
            print(json.dumps({"error": "playback did not end within 120 s"})); return 1
        finally:
            chrome.kill(); chrome.wait()
    finally:
        if server:
            server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)

sys.exit(main())
