"""How far the benchmark's "about N left" is from the time really left (issue 33: it overestimated about 4x).

    PYTHONPATH=.cache/collections .venv/bin/python tests/bench/eta_error.py [--runs 2000] [--seed 0]

Each run is a benchmark as vllm_bench runs it - a probe request, then per level (c=1, then c=8) a warmup and
the measured prompts - driven through the module's own Progress on a simulated clock. The truth per run: a
request at c=1 takes t1 (1-30 s), the c=8 level's throughput is S times c=1's (S from 2.5, compute-bound
batches, to 7.5, nearly linear), so a c=8 request takes 8 t1 / S (a batch of b < 8: b t1 / b ** log8(S)); each request varies by 10 % (lognormal);
at concurrency c, c clients each send their next request when their last one ends. Looked at every 2 % of the run's
time, the estimate is compared with the time really left. Printed per estimator and phase: the median ratio
estimated / true, the share within a factor 1.5, and the worst ratios (5th and 95th percentiles).
"""
import argparse
import heapq
import math
import random

from ansible_collections.jetson.specdec.plugins.module_utils.bench import progress as prog

LEVELS = [1, 8]


class Clock(object):
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def whole_run_pace(snap, now):
    """The estimate before this script (the pace over all requests of the run)."""
    done, total, started = snap.get("requests_done") or 0, snap.get("requests_total") or 0, snap.get("started")
    if not done or started is None or total <= done:
        return None
    return (now - started) * (total - done) / float(done)


def run_once(rng, num_prompts, warmup):
    """Snapshots (time, snapshot) at each finished request, and the run's end time."""
    t1 = math.exp(rng.uniform(math.log(1.0), math.log(30.0)))
    speedup = rng.uniform(2.5, 7.5)
    clock = Clock()
    snaps = []
    progress = prog.Progress(lambda snap: snaps.append((clock.t, snap)), LEVELS, num_prompts, warmup, clock=clock,
                             every=0.0)
    progress.start()

    def requests(step, count, concurrency, level):
        """``concurrency`` clients, each sending its next request when the last one ends (as vllm bench)."""
        progress.step(step, count, concurrency, level)
        batch = min(concurrency, count)  # a warmup of 2 prompts at c=8 runs a batch of 2
        latency = batch * t1 / batch ** (math.log(speedup) / math.log(8))
        ends = [clock.t + latency * rng.lognormvariate(0.0, 0.1) for dummy in range(batch)]
        heapq.heapify(ends)
        sent = len(ends)
        while ends:
            clock.t = heapq.heappop(ends)
            progress.request_done()
            if sent < count:
                heapq.heappush(ends, clock.t + latency * rng.lognormvariate(0.0, 0.1))
                sent += 1

    requests("probe", 1, 1, None)
    for index, concurrency in enumerate(LEVELS, 1):
        if warmup:
            requests("warmup", warmup, concurrency, index)
        requests("level", num_prompts, concurrency, index)
    progress.finish()
    return snaps, clock.t


def look(snaps, end, estimator):
    """(phase, ratio) every 2 % of the run: the latest snapshot then, its estimate over the truth."""
    out = []
    for i in range(1, 50):
        now = end * i / 50.0
        seen = [s for t, s in snaps if t <= now]
        if not seen:
            continue
        snap = seen[-1]
        estimate = estimator(snap, now)
        left = end - now
        if estimate is None or left <= 0:
            continue
        phase = "c=1" if snap.get("concurrency") in (None, 1) else "c=8"
        out.append((phase, max(estimate, 1e-9) / left))
    return out


def summary(ratios):
    ratios = sorted(ratios)
    if not ratios:
        return "no looks"

    def pick(share):
        return ratios[min(len(ratios) - 1, int(share * len(ratios)))]
    within = sum(1 for r in ratios if 1 / 1.5 <= r <= 1.5) / float(len(ratios))
    return "median %.2fx, within 1.5x %5.1f %%, 5th-95th %.2fx-%.2fx (n=%d)" % (
        pick(0.5), 100 * within, pick(0.05), pick(0.95), len(ratios))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = {"before (whole-run pace)": {"c=1": [], "c=8": []}, "now (level by level)": {"c=1": [], "c=8": []}}
    for dummy in range(args.runs):
        num_prompts = rng.choice([8, 30, 50, 100])
        warmup = rng.choice([0, 1, 2, 5])
        snaps, end = run_once(rng, num_prompts, warmup)
        for name, estimator in (("before (whole-run pace)", whole_run_pace),
                                ("now (level by level)", prog.eta_seconds)):
            for phase, ratio in look(snaps, end, estimator):
                results[name][phase].append(ratio)
    print("ETA estimated / time really left, %d runs (levels c=1 then c=8, seed %d):" % (args.runs, args.seed))
    for name, phases in results.items():
        for phase in ("c=1", "c=8"):
            print("  %-24s while %s runs: %s" % (name, phase, summary(phases[phase])))


if __name__ == "__main__":
    main()
