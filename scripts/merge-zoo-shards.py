#!/usr/bin/env python3
"""Merges `assay zoo` JSON reports of shards (scripts/gpu-zoo.sh) into one
Markdown table and JSON. A kernel is its spec file (names repeat across
families: gemm's and softmax's host_bug_stale); one found in several shards
keeps the row of the last file given (a rerun after a fix replaces the
earlier row).
   scripts/merge-zoo-shards.py OUT_STEM NOTE_FILE SHARD.json..."""
import json, statistics, sys

stem, note_file, files = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, sources, builds = {}, {}, set()
for f in files:
    d = json.load(open(f))
    builds.add((d.get("build") or {}).get("line") or d.get("commit", "unknown"))  # which assay made the shard
    for k in d["kernels"]:
        key = k.get("spec") or k["name"]
        rows[key] = k
        sources[key] = d.get("command", "")
checkers = ["assay", "kernelbench", "tutorial", "assert_close", "deepgemm"]
NA = {"status": "n/a", "seconds": 0}  # a report from before a checker existed

def family_of(k):
    if k.get("family"):
        return k["family"]
    parts = k.get("spec", "").split("/")
    return parts[parts.index("generated_kernels") + 1] if "generated_kernels" in parts[:-1] else "gemm"

def cell(k, c):
    x = k["checkers"].get(c, NA)
    s = x["status"]
    if s in ("caught", "false alarm"):
        v = f" ({x['verdict']})" if c == "assay" and x.get("verdict") else ""
        return f"{'FALSE ALARM' if s == 'false alarm' else 'caught'}{v} {x['seconds']:.2f}s"
    return s

names = sorted(rows, key=lambda n: (rows[n]["expect"] == "pass", rows[n]["name"], n))
md = ["| kernel | family | expect | " + " | ".join(checkers) + " |", "|---|---|---|" + "---|" * len(checkers)]
for n in names:
    k = rows[n]
    md.append(f"| {k['name']} | {family_of(k)} | {k['expect']} | " + " | ".join(cell(k, c) for c in checkers) + " |")
def totals_of(kernels):
    out = []
    for c in checkers:
        planted = [k for k in kernels if k["expect"] != "pass"]
        correct = [k for k in kernels if k["expect"] == "pass"]
        judged_p = [k for k in planted if k["checkers"].get(c, NA)["status"] != "n/a"]
        judged_c = [k for k in correct if k["checkers"].get(c, NA)["status"] != "n/a"]
        caught = [k["checkers"].get(c, NA)["seconds"] for k in judged_p if k["checkers"].get(c, NA)["status"] == "caught"]
        fa = sum(k["checkers"].get(c, NA)["status"] == "false alarm" for k in judged_c)
        na = len(planted) + len(correct) - len(judged_p) - len(judged_c)
        out.append({"checker": c, "planted": len(judged_p), "caught": len(caught), "correct": len(judged_c),
                    "false_alarms": fa, "median_detect_s": statistics.median(caught) if caught else None,
                    "not_applicable": na})
    return out

def rate(num, den):
    return f"{num}/{den} ({100 * num / max(1, den):.0f}%)"

totals = totals_of([rows[n] for n in names])
md += ["", "| checker | planted caught | false alarms on correct kernels | median seconds to detect | n/a |", "|---|---|---|---|---|"]
for t in totals:
    med = f"{t['median_detect_s']:.2f}" if t["caught"] else "-"
    md.append(f"| {t['checker']} | {rate(t['caught'], t['planted'])} | {t['false_alarms']}/{t['correct']} | {med} | "
              f"{t['not_applicable']} |")
# Per op family (the spec's op; for shards written before the field, the
# zoo folder the spec lies in), with the median seconds to the first failure
# over the bugs caught.
families = []
for n in names:
    if family_of(rows[n]) not in families:
        families.append(family_of(rows[n]))
family_totals = []
md += ["", "| family | kernels | " + " | ".join(checkers) + " |", "|---|---|" + "---|" * len(checkers)]
for f in families:
    ks = [rows[n] for n in names if family_of(rows[n]) == f]
    ts = totals_of(ks)
    family_totals.append({"family": f, "kernels": len(ks), "totals": ts})
    cells = ["n/a" if t["planted"] + t["correct"] == 0 else
             f"{rate(t['caught'], t['planted'])}, {t['false_alarms']}/{t['correct']} false, "
             + (f"{t['median_detect_s']:.2f} s" if t["caught"] else "-") for t in ts]
    md.append(f"| {f} | {len(ks)} | " + " | ".join(cells) + " |")
note = open(note_file).read()
built = "Built by: " + "; ".join(sorted(builds)) + "\n"
open(stem + ".md", "w").write(note + "\n" + built + "\n" + "\n".join(md) + "\n")
json.dump({"note": note, "builds": sorted(builds), "kernels": [rows[n] for n in names], "totals": totals,
           "families": family_totals, "sources": sources},
          open(stem + ".json", "w"), indent=1)
print("\n".join(md[-(8 + len(families)):]))
