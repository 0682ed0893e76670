# What the farm's benchmark scripts (bench/farm.py, bench/pipeline.py) share: messages, percentiles, and
# the JSON events of a coordinator's log.
import datetime, json, statistics, sys


def log(message):
    print(message, file=sys.stderr, flush=True)


def percentiles(values):
    v = sorted(values)
    pick = lambda q: v[min(len(v) - 1, int(round(q * (len(v) - 1))))]
    return {"p50": round(statistics.median(v), 2), "p90": round(pick(0.9), 2), "p99": round(pick(0.99), 2),
            "max": round(v[-1], 2), "samples": len(v)}


def event(line):
    """A line of `coordinator --json` as a dict, its `at` (ISO 8601) as seconds since 1970; None when it is no event."""
    if not line.startswith("{"):
        return None
    try:
        e = json.loads(line)
    except ValueError:
        return None
    if isinstance(e.get("at"), str):
        e["at"] = datetime.datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp()
    return e


def events(path):
    with open(path) as f:
        return [e for e in map(event, f) if e is not None]


def ip(*arguments, check=True):
    import subprocess
    return subprocess.run(["ip"] + list(arguments), capture_output=True, text=True, check=check)


class Hosts:
    """Network namespaces joined to this one by veth pairs (as the hosts' tests make them) and a throwaway
    PostgreSQL server (script/pg-cluster) listening on loopback and on each namespace's way back here.
    `with Hosts(prefix, count, folder) as hosts:` gives `hosts.url` (the queue from here) and
    `hosts.namespaces`, each (namespace, the address of this machine from it); everything goes at the end."""

    def __init__(self, prefix, count, folder):
        import os, subprocess
        # A 172.N subnet no interface has (namespaces a killed run left keep theirs; two routes to one subnet
        # would send this run's packets into the old veth), as the hosts' tests pick theirs.
        used = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout
        free = [n for n in range(16, 32) if f" 172.{n}." not in used]
        if not free:
            raise SystemExit("every 172.16-31 subnet is on an interface here: remove leftover namespaces (ip netns list)")
        self.names = [(f"{prefix}{i}", f"{prefix}h{i}", f"{prefix}c{i}", f"172.{free[-1]}.{10 + i}") for i in range(count)]
        self.pg = os.path.join(folder, "pg")
        self.script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../script/pg-cluster")

    def __enter__(self):
        import os, subprocess
        self.remove()  # left by an earlier run that was killed
        try:
            for ns, outside, inside, net in self.names:
                ip("netns", "add", ns)
                ip("link", "add", outside, "type", "veth", "peer", "name", inside)
                ip("link", "set", inside, "netns", ns)
                ip("addr", "add", f"{net}.1/24", "dev", outside)
                ip("link", "set", outside, "up")
                ip("netns", "exec", ns, "ip", "addr", "add", f"{net}.2/24", "dev", inside)
                ip("netns", "exec", ns, "ip", "link", "set", inside, "up")
                ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
            os.makedirs(self.pg)
            started = subprocess.run([self.script, "start", self.pg, "", ",".join(["127.0.0.1"] + [n[3] + ".1" for n in self.names])],
                                     capture_output=True, text=True, check=True).stdout
        except BaseException:
            self.__exit__()
            raise
        self.url = dict(line.split("=", 1) for line in started.split() if "=" in line)["MEDIAFARM_TEST_POSTGRES"].strip("'\"")
        self.namespaces = [(ns, net + ".1") for ns, _, _, net in self.names]
        return self

    def __exit__(self, *_):
        import subprocess
        subprocess.run([self.script, "stop", self.pg], capture_output=True)
        self.remove()

    def remove(self):
        for ns, outside, _, _ in self.names:
            ip("link", "del", outside, check=False)
            ip("netns", "del", ns, check=False)
