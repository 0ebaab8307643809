#!/usr/bin/env python3
"""Merges `assay zoo` JSON reports of shards (scripts/gpu-zoo.sh) into one
Markdown table and JSON. A kernel found in several shards keeps the row of
the last file given (a rerun after a fix replaces the earlier row).
   scripts/merge-zoo-shards.py OUT_STEM NOTE_FILE SHARD.json..."""
import json, statistics, sys

stem, note_file, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, sources, builds = {}, {}, set()
for f in files:
    d = json.load(open(f))
    builds.add((d.get("build") or {}).get("line") or d.get("commit", "unknown"))  # which assay made the shard
    for k in d["kernels"]:
        rows[k["name"]] = k
        sources[k["name"]] = d.get("command", "")
checkers = ["assay", "kernelbench", "tutorial", "assert_close"]

def cell(k, c):
    x = k["checkers"][c]
    s = x["status"]
    if s in ("caught", "false alarm"):
        v = f" ({x['verdict']})" if c == "assay" and x.get("verdict") else ""
        return f"{'FALSE ALARM' if s == 'false alarm' else 'caught'}{v} {x['seconds']:.2f}s"
    return s

names = sorted(rows, key=lambda n: (rows[n]["expect"] == "pass", n))
md = ["| kernel | expect | " + " | ".join(checkers) + " |", "|---|---|" + "---|" * len(checkers)]
for n in names:
    k = rows[n]
    md.append(f"| {n} | {k['expect']} | " + " | ".join(cell(k, c) for c in checkers) + " |")
totals = []
md += ["", "| checker | planted caught | false alarms on correct kernels | median seconds to detect | n/a |", "|---|---|---|---|---|"]
for c in checkers:
    planted = [rows[n] for n in names if rows[n]["expect"] != "pass"]
    correct = [rows[n] for n in names if rows[n]["expect"] == "pass"]
    judged_p = [k for k in planted if k["checkers"][c]["status"] != "n/a"]
    judged_c = [k for k in correct if k["checkers"][c]["status"] != "n/a"]
    caught = [k["checkers"][c]["seconds"] for k in judged_p if k["checkers"][c]["status"] == "caught"]
    fa = sum(k["checkers"][c]["status"] == "false alarm" for k in judged_c)
    na = len(planted) + len(correct) - len(judged_p) - len(judged_c)
    t = {"checker": c, "planted": len(judged_p), "caught": len(caught), "correct": len(judged_c), "false_alarms": fa,
         "median_detect_s": statistics.median(caught) if caught else None, "not_applicable": na}
    totals.append(t)
    med = f"{t['median_detect_s']:.2f}" if caught else "-"
    md.append(f"| {c} | {len(caught)}/{len(judged_p)} ({100 * len(caught) / max(1, len(judged_p)):.0f}%) | "
              f"{fa}/{len(judged_c)} | {med} | {na} |")
note = open(note_file).read()
built = "Built by: " + "; ".join(sorted(builds)) + "\n"
open(stem + ".md", "w").write(note + "\n" + built + "\n" + "\n".join(md) + "\n")
json.dump({"note": note, "builds": sorted(builds), "kernels": [rows[n] for n in names], "totals": totals,
           "sources": sources},
          open(stem + ".json", "w"), indent=1)
print("\n".join(md[-6:]))
