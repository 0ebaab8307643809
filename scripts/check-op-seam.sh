#!/usr/bin/env bash
# The op seam (harness/src/ops/op.h): nothing outside harness/src/ops/ names
# an op. For every op folder (harness/src/ops/<op>/) and every name an op
# registers (ASSAY_REGISTER_OP("name", ...)), the code outside ops/ must not
# include the folder, use the op's namespace (name::) or spell the name as a
# string literal. Comments may mention ops. Exits 1, listing each hit.
set -uo pipefail
cd "$(dirname "$0")/.."
src=harness/src
names=()
# A folder is an op's when it registers one; others (ops/rows: what row-wise
# ops share) are helpers of the ops, not ops.
for d in "$src"/ops/*/; do
  grep -rqE '^\s*ASSAY_REGISTER_OP\("' "$d" && names+=("$(basename "$d")")
done
while IFS= read -r n; do names+=("$n"); done < <(grep -rhE '^\s*ASSAY_REGISTER_OP\("' "$src/ops" | grep -oE 'ASSAY_REGISTER_OP\("[A-Za-z0-9_]+"' |
                                                 sed -E 's/.*"([^"]+)"/\1/' | sort -u)
[ ${#names[@]} -gt 0 ] || { echo "check-op-seam: no ops found under $src/ops"; exit 1; }
hits=0
files=$(find "$src" -path "$src/ops" -prune -o -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \) -print)
for f in $files; do
  # Code only: // comments and /* */ comment lines dropped.
  code=$(sed -E 's://.*$::; /^\s*\/?\*/d' "$f")
  for n in $(printf '%s\n' "${names[@]}" | sort -u); do
    if grep -nE "ops/$n/|\\b$n::|\"$n\"" <<<"$code" >/dev/null; then
      grep -nE "ops/$n/|\\b$n::|\"$n\"" <<<"$code" | sed "s|^|$f: names op '$n': |"
      hits=$((hits + 1))
    fi
  done
done
if [ "$hits" -gt 0 ]; then
  echo "check-op-seam: $hits file(s) outside $src/ops name an op (docs/adding-an-op.md, 'The seam')"
  exit 1
fi
echo "check-op-seam: no file outside $src/ops names any of: $(printf '%s\n' "${names[@]}" | sort -u | tr '\n' ' ')"
