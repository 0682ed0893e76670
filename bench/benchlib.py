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
