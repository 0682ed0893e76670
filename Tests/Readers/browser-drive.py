#!/usr/bin/python3
# Drives a real headless browser through a scenario and prints what it saw, as JSON: Chromium over the
# DevTools protocol, Firefox ESR over WebDriver BiDi (both its own remote protocol, no driver binary).
#   browser-drive.py chromium|firefox SCENARIO.json
# SCENARIO is a JSON list of steps, each an object with one of:
#   {"go": URL}                       load URL and wait for the page's load event
#   {"wait": JS, "timeout": S}        evaluate JS until it is truthy (default 20 s); fails after that
#   {"click": CSS}                    click the element (dialogs, e.g. confirm(), are accepted)
#   {"eval": JS}                      evaluate JS (awaiting a promise); its value is printed
#   {"post": URL, "headers": {...}}   POST to URL from here; prints {"status", "sent": ms since the epoch, before sending}
#   {"sleep": S}                      wait S seconds
# Prints {"results": [values of the eval steps, in order], "url": the last page's URL} or {"error": ...}.
import json, os, shutil, socket, subprocess, sys, tempfile, time, urllib.request
import websocket  # python3-websocket


def until(seconds):
    """Yields until `seconds` have passed (the caller breaks out once what it waits for is there)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        yield


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Remote:
    """A browser's remote protocol over a WebSocket: commands with ids, events in between."""

    def send(self, method, params):
        self.next += 1
        self.ws.send(json.dumps({"id": self.next, "method": method, "params": params}))
        return self.next

    def call(self, method, **params):
        mine = self.send(method, params)
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == mine:
                error = self.error_of(message)
                if error:
                    raise RuntimeError(f"{method}: {error}")
                return message.get("result", {})
            self.on_event(message)

    def wait(self, expression, timeout):
        deadline = time.time() + timeout
        while True:
            try:
                if self.evaluate(expression):
                    return
            except RuntimeError:
                pass  # the page is being replaced: asked again
            if time.time() > deadline:
                raise RuntimeError(f"timed out waiting for {expression} on {self.evaluate('location.href')}")
            time.sleep(0.1)


class Chromium(Remote):
    def __init__(self, folder):
        self.port = free_port()
        self.process = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                         f"--user-data-dir={folder}/profile", f"--remote-debugging-port={self.port}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        targets = None
        for _ in until(120):  # a limit on a browser that never starts, not on its speed
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json"))
                break
            except Exception:
                time.sleep(0.1)
        if targets is None:
            raise RuntimeError("chromium did not start")
        page = [t for t in targets if t["type"] == "page"][0]
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True, timeout=60)
        self.next = 0
        self.loaded = False
        self.call("Page.enable")

    def on_event(self, message):
        if message.get("method") == "Page.javascriptDialogOpening":
            self.send("Page.handleJavaScriptDialog", {"accept": True})
        elif message.get("method") == "Page.loadEventFired":
            self.loaded = True

    @staticmethod
    def error_of(message):
        return message.get("error")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('exception', {}).get('description', result['exceptionDetails'])}")
        return result.get("result", {}).get("value")

    def go(self, url):
        self.loaded = False
        self.call("Page.navigate", url=url)
        deadline = time.time() + 30
        while not self.loaded and time.time() < deadline:
            self.call("Runtime.evaluate", expression="1")
            time.sleep(0.05)
        self.wait("document.readyState === 'complete'", 30)

    def close(self):
        self.process.kill()
        self.process.wait()


class Firefox(Remote):
    PREFS = """user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("app.update.auto", false);
user_pref("remote.active-protocols", 1);
"""

    def __init__(self, folder):
        self.port = free_port()
        profile = os.path.join(folder, "profile")
        os.makedirs(profile)
        with open(os.path.join(profile, "user.js"), "w") as f:
            f.write(self.PREFS)
        self.process = subprocess.Popen(["firefox-esr", "--headless", "--no-remote", "--profile", profile,
                                         f"--remote-debugging-port={self.port}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env=dict(os.environ, MOZ_HEADLESS="1"))
        self.ws = None
        for _ in until(120):  # a limit on a browser that never starts, not on its speed
            try:
                self.ws = websocket.create_connection(f"ws://127.0.0.1:{self.port}/session", suppress_origin=True, timeout=60)
                break
            except Exception:
                time.sleep(0.1)
        if self.ws is None:
            raise RuntimeError("firefox did not start")
        self.next = 0
        self.call("session.new", capabilities={"alwaysMatch": {"unhandledPromptBehavior": {"default": "accept"}}})
        self.call("session.subscribe", events=["browsingContext.userPromptOpened"])
        self.context = self.call("browsingContext.getTree")["contexts"][0]["context"]

    def on_event(self, message):
        if message.get("method") == "browsingContext.userPromptOpened":
            self.send("browsingContext.handleUserPrompt", {"context": message["params"]["context"], "accept": True})

    @staticmethod
    def error_of(message):
        return f"{message.get('error')}: {message.get('message')}" if message.get("type") == "error" else None

    @staticmethod
    def value(remote):
        kind = remote.get("type")
        if kind in ("undefined", "null"):
            return None
        if kind == "array":
            return [Firefox.value(v) for v in remote.get("value", [])]
        if kind == "object":
            return {k: Firefox.value(v) for k, v in remote.get("value", [])}
        return remote.get("value")

    def evaluate(self, expression):
        result = self.call("script.evaluate", expression=expression, target={"context": self.context}, awaitPromise=True,
                           resultOwnership="none")
        if result.get("type") == "exception":
            raise RuntimeError(f"{expression}: {result.get('exceptionDetails', {}).get('text')}")
        return self.value(result.get("result", {}))

    def go(self, url):
        self.call("browsingContext.navigate", context=self.context, url=url, wait="complete")

    def close(self):
        try:
            self.call("session.end")
        except Exception:
            pass
        self.process.kill()
        self.process.wait()


def main():
    kind = sys.argv[1]
    with open(sys.argv[2]) as f:
        steps = json.load(f)
    folder = tempfile.mkdtemp(prefix=f"mediafarm-{kind}-")
    browser = None
    results = []
    try:
        browser = (Chromium if kind == "chromium" else Firefox)(folder)
        for step in steps:
            if "go" in step:
                browser.go(step["go"])
            elif "wait" in step:
                browser.wait(step["wait"], step.get("timeout", 20))
            elif "click" in step:
                selector = json.dumps(step["click"])
                if not browser.evaluate(f"!!document.querySelector({selector})"):
                    raise RuntimeError(f"nothing to click: {step['click']} on {browser.evaluate('location.href')}")
                # Clicked after this evaluation returns: a dialog or a navigation it starts cannot hold the reply.
                browser.evaluate(f"setTimeout(function () {{ document.querySelector({selector}).click(); }}, 0); true")
                time.sleep(0.3)
                browser.wait("document.readyState === 'complete'", 30)
            elif "eval" in step:
                results.append(browser.evaluate(step["eval"]))
            elif "post" in step:
                request = urllib.request.Request(step["post"], data=b"", method="POST", headers=step.get("headers", {}))
                sent = time.time() * 1000
                with urllib.request.urlopen(request, timeout=30) as answer:
                    results.append({"status": answer.status, "sent": sent})
            elif "sleep" in step:
                time.sleep(step["sleep"])
        print(json.dumps({"results": results, "url": browser.evaluate("location.href")}))
    except Exception as error:
        print(json.dumps({"error": str(error), "results": results}))
        return 1
    finally:
        if browser:
            browser.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
