#!/usr/bin/env bash
# The host tests with the harness built under AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/, an hour's build on 2 cores):
# finds what a plain run cannot, such as a read of freed memory whose
# answer is usually right (2026-12-06: the loader's cache key hashed the
# text of a destroyed string).
#   bash scripts/sanitize-host-tests.sh [CATCH_FILTER]
# Exit 0 when no sanitizer reported anything; the report is
# ASAN_DIR/sanitize.log (ASAN_DIR: build-asan by default). Test failures
# without a sanitizer report are listed, not counted: under ASan, tests
# that bound the process's memory (its shadow and quarantine are memory)
# and the valgrind replays (valgrind cannot run an ASan binary) fail by
# design.
#
# The worker processes stay plain builds (build/'s): a worker runs under
# RLIMIT_AS, which leaves ASan no room for its shadow, so an ASan worker
# dies at start-up. The harness's side of every exchange is sanitized.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
filter=${1:-"~[samples]"}
dir=${ASAN_DIR:-build-asan}
[ -x build/assay-worker ] && [ -x build/tests/assay_fake_worker ] || bash scripts/build.sh
san="-fsanitize=address,undefined -fno-omit-frame-pointer"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O1 $san" -DCMAKE_CUDA_FLAGS=-O2 \
  -DCMAKE_CUDA_ARCHITECTURES=75-virtual -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" >/dev/null
cmake --build "$dir" -j "$(nproc)" --target assay_tests assay assay-worker assay_fake_worker
cp build/assay-worker "$dir/assay-worker"
cp build/tests/assay_fake_worker "$dir/tests/assay_fake_worker"
log=$dir/sanitize.log
# ASSAY_WORKER as well, for the tests that start workers by name.
ASSAY_WORKER=$(realpath "$dir")/assay-worker ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  "$dir/tests/assay_tests" "$filter" >"$log" 2>&1
reports=$(grep -c -E "ERROR: AddressSanitizer|runtime error:" "$log")
echo "sanitize-host-tests: $(grep -E '^(All tests passed|test cases:)' "$log" | tail -1)"
echo "sanitize-host-tests: failed assertions by file (memory-bound and valgrind tests fail by design):"
grep -E '^/.*: FAILED:' "$log" | sed -E 's/:[0-9]+: FAILED://; s#.*/tests/#  tests/#' | sort | uniq -c
echo "sanitize-host-tests: $reports sanitizer reports (log: $log)"
grep -n -A6 -E "ERROR: AddressSanitizer|runtime error:" "$log" | head -60
[ "$reports" -eq 0 ]
