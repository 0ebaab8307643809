#!/usr/bin/env python3
"""Where a process's main thread spent its wall time, from the stacks that
bench/trace/sampler.cpp recorded (DIR/samples.<pid>.txt).

  bench/trace/samples.py DIR --bin NAME=UNSTRIPPED_PATH ... [--top N] [--under FUNC]

Each --bin maps a binary's file name (as the memory map names the one that
ran: assay_bench_speed, assay-worker, ...) to an unstripped build of the
same code, whose symbols addr2line reads; other libraries are named by file.
Prints per process the functions that were running (self), the innermost
function of the program itself (own: time in libc or the CUDA driver
charged to its caller) and those on the stack (inclusive), as shares of
the samples; --under FUNC keeps only the
samples with FUNC on the stack and shows what it called.
"""
import argparse
import collections
import os
import subprocess
import sys


def parse(path):
    maps, samples = [], []
    section = None
    with open(path) as f:
        for line in f:
            if line.startswith("# maps"):
                section = "maps"
                continue
            if line.startswith("# samples"):
                section = "samples"
                continue
            if section == "maps":
                parts = line.split()
                if len(parts) < 6 or "x" not in parts[1]:
                    continue  # executable mappings only
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append((lo, hi, int(parts[2], 16), parts[5]))
            elif section == "samples" and line.startswith("S "):
                samples.append([int(x, 16) for x in line.split()[1:]])
    return maps, samples


def locate(maps, pc):
    for lo, hi, off, path in maps:
        if lo <= pc < hi:
            return path, pc - lo + off
    return None, pc


def symbolize(binaries, wanted):
    """{(path, offset): name} through one addr2line run per binary."""
    names = {}
    by_bin = collections.defaultdict(list)
    for path, off in wanted:
        by_bin[path].append(off)
    for path, offs in by_bin.items():
        base = os.path.basename(path)
        exe = binaries.get(base)
        if not exe:
            for off in offs:
                names[(path, off)] = f"[{base}]"
            continue
        offs = sorted(set(offs))
        out = subprocess.run(["addr2line", "-f", "-C", "-e", exe] + [hex(o) for o in offs],
                             capture_output=True, text=True).stdout.splitlines()
        for i, off in enumerate(offs):
            name = out[2 * i] if 2 * i < len(out) else "??"
            names[(path, off)] = name if name != "??" else f"[{base}+{off:#x}]"
    return names


def report(path, binaries, top, under):
    maps, samples = parse(path)
    if not samples:
        return
    stacks = []
    wanted = set()
    for s in samples:
        frames = []
        for i, pc in enumerate(s):
            where, off = locate(maps, pc if i == 0 else pc - 1)  # a return address: its call
            if where and "libassay_sampler" in where:
                continue
            frames.append((where or "?", off))
        # pc[0] is the interrupted instruction, then the unwound stack, which
        # repeats it (through the signal frame): keep one.
        if len(frames) > 1 and frames[1][0] == frames[0][0] and abs(frames[1][1] - frames[0][1]) <= 1:
            frames.pop(1)
        stacks.append(frames)
        wanted.update(frames)
    names = symbolize(binaries, wanted)
    named = [[names[f] for f in st] for st in stacks]
    if under:
        kept = []
        for st in named:
            if under in st:
                kept.append(st[: st.index(under)])  # the callees below it
        named = kept
    n = len(named)
    self_count = collections.Counter(st[0] for st in named if st)
    # The innermost frame of the program itself (a --bin binary): time spent
    # in libc, the CUDA driver or a kernel's library charged to its caller.
    ours = set(names[f] for f in wanted if os.path.basename(f[0]) in binaries)
    own_count = collections.Counter(next((x for x in st if x in ours), "(outside the program)") for st in named)
    incl = collections.Counter()
    for st in named:
        incl.update(set(st))
    title = f"under {under}: " if under else ""
    print(f"\n## {os.path.basename(path)}: {title}{n} samples of {len(samples)}")
    print("\n| self % | function |\n|---|---|")
    for name, c in self_count.most_common(top):
        print(f"| {100.0 * c / n:.1f} | {name[:140]} |")
    print("\n| own % | innermost function of the program |\n|---|---|")
    for name, c in own_count.most_common(top):
        print(f"| {100.0 * c / n:.1f} | {name[:140]} |")
    print("\n| inclusive % | function |\n|---|---|")
    for name, c in incl.most_common(top):
        print(f"| {100.0 * c / n:.1f} | {name[:140]} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--bin", action="append", default=[], help="NAME=UNSTRIPPED_PATH")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--under", default=None)
    a = ap.parse_args()
    binaries = dict(b.split("=", 1) for b in a.bin)
    files = sorted(f for f in os.listdir(a.dir) if f.startswith("samples.") and f.endswith(".txt"))
    if not files:
        sys.exit(f"samples.py: no samples.*.txt in {a.dir}")
    for f in files:
        report(os.path.join(a.dir, f), binaries, a.top, a.under)


if __name__ == "__main__":
    main()
