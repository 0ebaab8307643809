#!/usr/bin/env python3
"""Summarizes the timelines bench/trace/cupti_trace.cpp wrote.

  summarize.py DIR [--timeline MS_FROM MS_LEN]

Per process: GPU work (kernels, copies, memsets) and runtime calls grouped by
name, with count, total and mean, biggest first; with --timeline, every
record of all processes in one merged window (milliseconds from the first
record), to read what one case does in order.
"""
import collections
import glob
import os
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").rsplit(",", 3)
            if len(parts) != 4:
                continue
            head, start, end, extra = parts
            kind, _, name = head.partition(",")
            rows.append((kind, name, int(start), int(end), int(extra)))
    return rows


def short(name, width=90):
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    folder = sys.argv[1]
    files = sorted(glob.glob(os.path.join(folder, "trace.*.csv")))
    procs = {os.path.basename(p)[6:-4]: load(p) for p in files}
    t0 = min((r[2] for rows in procs.values() for r in rows), default=0)
    for pid, rows in procs.items():
        if not rows:
            continue
        span = (max(r[3] for r in rows) - min(r[2] for r in rows)) / 1e6
        print(f"\n## process {pid}: {len(rows)} records over {span:.1f} ms")
        groups = collections.defaultdict(lambda: [0, 0])
        for kind, name, start, end, _ in rows:
            g = groups[(kind, name)]
            g[0] += 1
            g[1] += end - start
        print(f"| kind | name | count | total ms | mean us |\n|---|---|---|---|---|")
        for (kind, name), (n, total) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:40]:
            print(f"| {kind} | {short(name)} | {n} | {total / 1e6:.2f} | {total / n / 1e3:.1f} |")
    if "--timeline" in sys.argv:
        i = sys.argv.index("--timeline")
        lo = float(sys.argv[i + 1]) * 1e6 + t0
        hi = lo + float(sys.argv[i + 2]) * 1e6
        merged = sorted((r[2], pid, r) for pid, rows in procs.items() for r in rows if lo <= r[2] < hi)
        print(f"\n## timeline from {sys.argv[i + 1]} ms, {sys.argv[i + 2]} ms")
        for start, pid, (kind, name, s, e, extra) in merged:
            print(f"{(s - t0) / 1e6:10.3f} {(e - s) / 1e3:9.1f}us {pid:>8} {kind:8} {short(name, 70)} {extra}")


if __name__ == "__main__":
    main()
