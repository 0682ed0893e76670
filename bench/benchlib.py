# What the farm's benchmark scripts (bench/farm.py, bench/pipeline.py) share: messages, percentiles, and
# the JSON events of a coordinator's log.
import json, statistics, sys


def log(message):
    print(message, file=sys.stderr, flush=True)


def percentiles(values):
    v = sorted(values)
    pick = lambda q: v[min(len(v) - 1, int(round(q * (len(v) - 1))))]
    return {"p50": round(statistics.median(v), 2), "p90": round(pick(0.9), 2), "p99": round(pick(0.99), 2),
            "max": round(v[-1], 2), "samples": len(v)}


def events(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out
