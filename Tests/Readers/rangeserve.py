#!/usr/bin/python3
# A static HTTP server for a package's folder that answers byte ranges (RFC 9110 14.2: one range,
# "bytes=A-B", "bytes=A-" or "bytes=-N"), as a single-file package's players ask; Python's own
# http.server answers every request whole. Each request is logged to stderr as http.server logs it.
#   rangeserve.py PORT FOLDER
import functools, http.server, os, re, shutil, sys

TYPES = {".m3u8": "application/vnd.apple.mpegurl", ".m4s": "video/iso.segment", ".vtt": "text/vtt", ".ts": "video/mp2t",
         ".mpd": "application/dash+xml"}


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def do_GET(self):
        wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        path = self.translate_path(self.path)
        if not wanted or not os.path.isfile(path) or wanted.group(1) == wanted.group(2) == "":
            return super().do_GET()
        size = os.path.getsize(path)
        first, last = wanted.group(1), wanted.group(2)
        start = int(first) if first else max(0, size - int(last))
        end = min(int(last), size - 1) if first and last else size - 1
        if start >= size or end < start:
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = f.read(min(left, 1 << 16))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)


def main():
    port, folder = int(sys.argv[1]), sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(RangeHandler, directory=folder))
    server.serve_forever()


if __name__ == "__main__":
    main()
