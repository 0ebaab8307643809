#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzzers/ with clang (ASan + UBSan, apart
# from the main g++/nvcc build) and runs each for FUZZ_SECONDS (default 60)
# on its seed corpus. Exits non-zero on any finding and prints the reproducer.
#
#   bash scripts/fuzz-parsers.sh                 # all targets
#   FUZZ_SECONDS=600 bash scripts/fuzz-parsers.sh fuzz_case
#   build-fuzz/fuzz_case build-fuzz/artifacts/fuzz_case/crash-...   # replay one input
#   (fuzz_spec resolves `source:` against $ASSAY_FUZZ_SPEC_DIR: set it to
#   generated_kernels/gemm/host when replaying by hand)
#
# New corpus entries go to build-fuzz/corpus/<target>/ (kept between runs,
# never into the repository); the seeds in fuzzers/corpus/<target>/ are only read.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bash scripts/install-deps.sh

seconds=${FUZZ_SECONDS:-60}
all_targets=(fuzz_spec fuzz_case fuzz_requires)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
out=build-fuzz
cxx=${FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null 2>&1 || cxx=clang++

# Only the parsers and what they link against: no CUDA, no executor.
lib_sources=(
  harness/src/spec/spec.cpp
  harness/src/spec/requires.cpp
  harness/src/bench/bench_shapes.cpp  # the `bench:` key
  harness/src/case/case.cpp
  harness/src/core/yaml_input.cpp
  harness/src/core/names.cpp
  harness/src/ops/op.cpp
  harness/src/ops/gemm/gemm_problem.cpp
  harness/src/ops/gemm/gemm_case_file.cpp
  fuzzers/parser_ops.cpp  # GEMM's spec rules without the rest of the op
)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -DFMT_HEADER_ONLY
       -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -Iharness/src -Iharness/include -I.)
# yaml-cpp as Debian builds it (gcc, no sanitizers); statically where available.
yaml_cpp=$("$cxx" -print-file-name=libyaml-cpp.a)
[ -f "$yaml_cpp" ] || yaml_cpp=-lyaml-cpp

# ---- build, skipped when no input changed ----
mkdir -p "$out/obj"
stamp=$(
  {
    echo "$cxx ${flags[*]} $yaml_cpp"
    "$cxx" --version | head -n 1
    find harness/src harness/include fuzzers -maxdepth 4 -type f \( -name '*.h' -o -name '*.cpp' \) -print0 |
      sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
)
have_all=1
for t in "${all_targets[@]}"; do [ -x "$out/$t" ] || have_all=0; done
if [ "$have_all" = 1 ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "fuzz-parsers: build is up to date"
else
  echo "fuzz-parsers: building with $cxx"
  rm -f "$out/stamp"
  rm -f "$out/obj/"*.o "$out/obj/FAILED"
  objs=()
  for src in "${lib_sources[@]}" "${all_targets[@]/%/.cpp}"; do
    [[ $src == */* ]] || src=fuzzers/$src
    obj=$out/obj/$(basename "${src%.cpp}").o
    extra=(-fsanitize=fuzzer-no-link)
    [[ $src == fuzzers/* ]] && extra+=(-Wall -Wextra -Werror)
    [[ " ${all_targets[*]} " == *" $(basename "${src%.cpp}") "* ]] || objs+=("$obj")
    {
      "$cxx" "${flags[@]}" "${extra[@]}" -c "$src" -o "$obj" ||
        { echo "fuzz-parsers: compiling $src failed" >&2; touch "$out/obj/FAILED"; }
    } &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  done
  wait
  [ ! -e "$out/obj/FAILED" ] || exit 1
  # Objects, not an archive: the op and the version-1 case reader register
  # themselves at start-up, and an archive would drop what nothing names.
  for t in "${all_targets[@]}"; do
    "$cxx" "${flags[@]}" -fsanitize=fuzzer "$out/obj/$t.o" "${objs[@]}" "$yaml_cpp" -o "$out/$t"
  done
  echo "$stamp" >"$out/stamp"
fi

# ---- run ----
# The spec target parses its input as a spec living next to the seed specs,
# so their `source:` entries resolve.
export ASSAY_FUZZ_SPEC_DIR=$root/generated_kernels/gemm/host
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The targets run side by side, one per core (each fuzzer is one process).
for t in "${targets[@]}"; do
  [ -x "$out/$t" ] || { echo "fuzz-parsers: unknown target $t (known: ${all_targets[*]})" >&2; exit 2; }
done
run_target() {
  local t=$1 corpus=$out/corpus/$1 artifacts=$out/artifacts/$1 log=$out/logs/$1.log rc=0
  mkdir -p "$corpus" "$artifacts" "$out/logs"
  rm -f "$artifacts"/*
  "$out/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -dict="fuzzers/$t.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$corpus" "fuzzers/corpus/$t" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$out/logs/$t.rc"
}
for t in "${targets[@]}"; do
  echo "fuzz-parsers: $t for ${seconds}s (log: $out/logs/$t.log)"
  run_target "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
done
wait

status=0
summary=()
for t in "${targets[@]}"; do
  artifacts=$out/artifacts/$t
  log=$out/logs/$t.log
  rc=$(cat "$out/logs/$t.rc" 2>/dev/null || echo "?")
  # Inputs that only ran slowly are written as slow-unit-*; they are not findings.
  found=$(find "$artifacts" -type f ! -name 'slow-unit-*' | sort)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/cov \1, ft \2, corpus \3/p' <<<"$last")
  line="$t: ${execs:-?} runs, ${rate:-?} exec/s, ${cov:-no coverage line}"
  if [ "$rc" != 0 ] || [ -n "$found" ]; then
    status=1
    line+=" -- FINDING (exit $rc)"
    echo "fuzz-parsers: FINDING in $t (exit $rc); the end of $log:" >&2
    tail -n 60 "$log" >&2
    if [ -n "$found" ]; then
      while IFS= read -r f; do
        echo "fuzz-parsers: reproducer: $f" >&2
        echo "fuzz-parsers:   replay: ASSAY_FUZZ_SPEC_DIR=generated_kernels/gemm/host $out/$t $f" >&2
      done <<<"$found"
    else
      echo "fuzz-parsers: no reproducer was written; see $log" >&2
    fi
  fi
  summary+=("$line")
done

echo "fuzz-parsers: summary"
printf '  %s\n' "${summary[@]}"
[ "$status" = 0 ] && echo "fuzz-parsers: no findings" || echo "fuzz-parsers: FINDINGS, see above" >&2
exit "$status"
