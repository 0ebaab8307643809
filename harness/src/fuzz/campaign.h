// `assay fuzz`: a time-boxed, coverage-guided campaign on one kernel, with
// libFuzzer as the engine. Inputs decode into cases (the op's codec, Op::decode), every
// case runs through the same executor and guards as the gate, the features of
// fuzz/feedback.h steer libFuzzer, and each new failure signature is saved,
// shrunk and reported while the campaign goes on.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "exec/loader.h"
#include "gate/gate.h"
#include "spec/spec.h"

namespace assay::fuzz {

struct CampaignOptions {
  double seconds = 60;
  uint64_t seed = 1;
  int shard = 0, shards = 1;            // this machine's part of the seed space
  std::filesystem::path out_dir = "assay-out";
  std::filesystem::path corpus_dir;     // libFuzzer's corpus; empty: OUT/<kernel>/fuzz-corpus
  bool features = true;                 // extra-counter feedback (off: to measure what it is worth)
  int64_t max_dim = 0;                  // ordinary cases, each size below; 0: 8192
  double max_work = 0;                  // ordinary cases, Op::work at most; 0: 2^22 on the host, 2^30 on a GPU
  double max_elements = 0;              // and the tensors' elements at most; 0: 2^17 on the host, 2^22 on a GPU
  double huge_share = 0.25;             // cuda: at most this share of the time on huge cases (fuzz/limits.h)
  int shrink_attempts = 300;           // the nonzero cut (ddmin) needs its share
  int job = -1;                         // >= 0: one of --jobs; its files go to OUT/<kernel>/job-<job>/
  Isolation isolation = Isolation::worker;
  double timeout_s = 0;
  double host_memory_limit = 0;         // bytes this process may hold; 0: default_host_memory_limit()
  LoaderOptions loader;
};

// Runs the campaign in this process and never returns. It ends within
// `seconds` + deadline_slack(seconds) of its start, set-up included: a case
// still running at `seconds` is stopped (its worker killed) and recorded as
// unfinished, shrinking stops with what it has, and a watchdog thread ends
// the process with its summary at the slack's end whatever is running (in
// process, a call cannot be stopped otherwise) or when the process holds more
// host memory than its limit. The summary goes to
// OUT/<kernel>/fuzz-summary.json and stdout; the exit status is 1 when a
// failure was found, else 0 (3 when stopped for memory).
[[noreturn]] void run_campaign(const Spec& spec, const CampaignOptions& opt);

// libFuzzer's corpus merge (-merge=1, or its inner step) through the same
// driver and features as the campaign; `argv` is libFuzzer's whole command
// line, argv[0] the command libFuzzer re-runs for the inner step (see
// cli/corpus_command.cpp). Never returns: libFuzzer exits when done.
[[noreturn]] void run_merge(const Spec& spec, const CampaignOptions& opt, const std::vector<std::string>& argv);

}  // namespace assay::fuzz
