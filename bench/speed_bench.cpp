// Benchmark (issue #5): assay's end-to-end throughput next to a minimal
// in-process pipeline, measured in one run on the same kernel and shapes.
//   minimal:  fill A and B, one candidate call, FP64 reference and bound,
//             read C back, compare, synchronize: what a bare checker does;
//   assay:    run_case with every guard (poison, canaries, snapshots, three
//             calls, stale/cached/repeat checks), in process and in a worker;
//             for small cases also planned (run_cases), as the gate runs them
//             with a worker: one case, then kBatchCases, per exchange.
// For large cases it also times the candidate alone and the reference alone
// (after a synchronize), so the report can state the overhead.
// On cuda, also issue #18's figures, measured in the same run:
//   ceiling: the minimal differential-case loop on the device (ceiling.h),
//            plain and as a CUDA graph, at the tiny shapes;
//   tiny_ratio_to_ceiling: the gate path's cases/s at 32^3 over the plain ceiling's;
//   medium_overhead, large_overhead: an assay case's time at 512^3 and
//            4096^3 over (the candidate's calls + one FP64 reference at
//            cuBLAS's rate: two DGEMMs);
// written with --json FILE (GPU, date, commit, targets, met).
//
//   assay_bench_speed [--spec SPEC] [--backend cuda|host] [--seconds S] [--out FILE.md] [--json FILE.json]
//                     [--sizes 32,512,...] [--gate-only 1]
// --sizes: only these of the shapes; --gate-only 1: only the gate path's
// cases/s (for a profiler's timeline of it: bench/trace/), no other figure.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <string>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_cli.h"
#include "ceiling.h"
#include "backend/cuda/cuda_backend.h"

#include "backend/backend.h"
#include "core/build_info.h"
#include "exec/call_frame.h"
#include "exec/executor.h"
#include "exec/loader.h"
#include "exec/patterns.h"
#include "exec/worker_runner.h"
#include "gate/gate.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"
#include "ops/gemm/gemm_tolerance.h"

using namespace assay;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

gemm::Problem square(const Spec& spec, int64_t s, uint64_t seed) {
  gemm::Problem c;
  c.m = c.n = c.k = s;
  const auto dt = gemm::spec_dtypes(spec);
  c.a_type = dt[0], c.b_type = dt[1], c.c_type = dt[2];
  c.a = {s, 1, 0}, c.b = {s, 1, 0}, c.c = {s, 1, 0};
  c.recipe = Recipe::uniform, c.seed = seed;
  return c;
}

// The bare pipeline's buffers and call (the executor's own call frame),
// allocated once per shape.
struct Minimal {
  Backend& be;
  gemm::Problem c;
  std::array<TensorGeom, 3> g;
  Buffer buf[3];
  std::unique_ptr<CallFrame> frame;
  const assay_call& call() const { return frame->call; }

  Minimal(Backend& b, const gemm::Problem& cs) : be(b), c(cs), g(gemm::tensors(cs)) {
    std::byte* data[3];
    for (int i = 0; i < 3; ++i) {
      buf[i] = be.allocate(size_t(g[i].span()) * dtype_bytes(g[i].dtype));
      data[i] = buf[i].data;
    }
    frame = std::make_unique<CallFrame>(be, gemm::to_case(c), data);  // alpha, beta: the case's (1, 0)
  }
  ~Minimal() {
    for (auto& b : buf) be.release(b);
  }
  void fill(uint64_t seed) {
    for (int i : {0, 1}) be.fill_tensor(buf[i], g[i], gemm::recipe_params(c, gemm::Operand(i)), seed, i);
  }
  bool one_case(assay_run_fn fn, const Spec& spec, uint64_t seed) {
    fill(seed);
    fn(&call());
    auto ref = gemm::reference(be, c, buf[0].data, buf[1].data, nullptr);
    std::vector<std::byte> out(buf[2].bytes);
    be.download(buf[2], out.data());
    Tolerance tol = gemm::tolerance(c, spec.compute, gemm::kDefaultScale, poison_bits(c.c_type));
    CompareStats s = compare(tol, g[2], out.data(), ref.ref.data(), ref.bound.data(), ref.terms.data());
    return be.synchronize().empty() && verdict_of(s) == Verdict::pass;
  }
};

// The in-process runner, timed: how much of a case is the call itself.
struct TimedRunner final : Runner {
  Runner& inner;
  long calls = 0;
  double seconds = 0;
  explicit TimedRunner(Runner& r) : inner(r) {}
  RunStatus run(const assay_call& call, double timeout_s) override {
    auto t0 = Clock::now();
    RunStatus s = inner.run(call, timeout_s);
    ++calls, seconds += since(t0);
    return s;
  }
};

struct Rate {
  double cases = 0, seconds = 0;
  double per_s() const { return seconds > 0 ? cases / seconds : 0; }
};

// Runs f(i) until `seconds` have passed (at least `min_cases` times); each
// f runs `per_call` cases.
template <class F> Rate timed(double seconds, int min_cases, F&& f, int per_call = 1) {
  Rate r;
  auto t0 = Clock::now();
  while (r.cases < min_cases || since(t0) < seconds) {
    if (!f(uint64_t(r.cases))) throw std::runtime_error("a case failed during the benchmark");
    r.cases += per_call;
  }
  r.seconds = since(t0);
  return r;
}

}  // namespace

int run_bench(int argc, char** argv) {
  const bench_cli::Options o = bench_cli::parse_options(
      argc, argv, {"--spec", "--backend", "--seconds", "--out", "--json", "--sizes", "--gate-only"});
  double seconds = 5;
  const std::string backend_name = o.value("--backend", "cuda");
  const bool numbers_ok = bench_cli::read_number(o.value("--seconds", "5"), seconds) && seconds > 0;
  if (!o.ok || !numbers_ok || (backend_name != "cuda" && backend_name != "host")) {
    std::fprintf(stderr,
                 "usage: %s [--spec SPEC] [--backend cuda|host] [--seconds S > 0] [--out FILE.md] [--json FILE.json]\n"
                 "          [--sizes 32,512,...] [--gate-only 0|1]\n",
                 argv[0]);
    return bench_cli::kUsage;
  }
  const fs::path out = o.value("--out", ""), json_out = o.value("--json", "");
  fs::path spec_file = o.value("--spec", "");
  const std::string sizes_given = o.value("--sizes", "");
  const std::string only_sizes = sizes_given.empty() ? "" : "," + sizes_given + ",";
  const bool gate_only = o.value("--gate-only", "0") != "0";
  const BackendKind kind = backend_name == "host" ? BackendKind::host : BackendKind::cuda;
  if (spec_file.empty())
    spec_file = bench_cli::source_dir() /
                (kind == BackendKind::cuda ? "generated_kernels/gemm/cuda/cublas_f32.yaml"
                                           : "generated_kernels/gemm/host/naive_f32.yaml");
  Spec spec = load_spec(spec_file);
  auto be = make_backend(kind);
  LoaderOptions lo;
  if (kind == BackendKind::cuda) lo.cuda_arch = cuda_arch();
  LoadedKernel kernel = load_kernel(spec, lo);
  InProcessRunner bare_runner(kernel.run);
  TimedRunner in_process(bare_runner);
  WorkerOptions wo;
  wo.library = kernel.library, wo.entry = spec.entry;
  WorkerRunner worker(*be, wo);
  if (std::string why = worker.warm_up(); !why.empty()) throw std::runtime_error(why);
  const Op& op = op_of(spec);
  ExecOptions exec{spec.compute, gemm::kDefaultScale, spec.deterministic, false, 0};

  struct Size { const char* name; int64_t s; };
  const std::vector<Size> sizes = kind == BackendKind::cuda
      ? std::vector<Size>{{"tiny (32^3)", 32}, {"tiny (64^3)", 64}, {"medium (512^3)", 512}, {"large (4096^3)", 4096}}
      : std::vector<Size>{{"tiny (32^3)", 32}, {"tiny (64^3)", 64}, {"medium (160^3)", 160}};
  std::string table = fmt::format(
      "kernel: {} ({}), {} s per measurement\n\n"
      "| shape | minimal cases/s | assay in process | worker, call by call | worker, planned, 1 case per exchange "
      "| worker, planned, {} per exchange | **worker (as the gate runs it) / in process** | in process, planned |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n", spec.name, name(kind), seconds, kBatchCases);
  std::string overhead, profile, ceiling_text;
  nlohmann::json figures = nlohmann::json::object();
  for (const Size& size : sizes) {
    if (!only_sizes.empty() && only_sizes.find(fmt::format(",{},", size.s)) == std::string::npos) continue;
    Minimal minimal(*be, square(spec, size.s, 1));
    auto case_at = [&](uint64_t i) { return gemm::to_case(square(spec, size.s, 1000 + i)); };
    // As the gate runs small cases with a worker: planned, kBatchCases per exchange.
    const bool planned = plannable(op, case_at(0));
    auto planned_at = [&](Runner& runner, uint64_t first, size_t count) {
      std::vector<Case> cases;
      for (size_t j = 0; j < count; ++j) cases.push_back(case_at(first + j));
      for (const CaseOutcome& o : run_cases(op, *be, runner, cases, exec))
        if (o.verdict != Verdict::pass) return false;
      return true;
    };
    const int warm = size.s >= 4096 ? 1 : 20;
    const int min_cases = size.s >= 4096 ? 3 : 10;
    // What `assay check` does with this case: planned on cuda, call by call on the host (gate/gate.h).
    const bool gate_plans = planned && planning_pays(kind);
    if (gate_only) {  // as the gate runs it, nothing else
      auto gate_case = [&](uint64_t i) {
        return gate_plans ? planned_at(worker, i, kBatchCases)
                          : run_case(op, *be, worker, case_at(i), exec).verdict == Verdict::pass;
      };
      timed(0, warm, gate_case);
      const Rate r = timed(seconds, min_cases, gate_case, gate_plans ? int(kBatchCases) : 1);
      table += fmt::format("| {} | gate path only: {:.1f} cases/s ({} cases) |\n", size.name, r.per_s(), r.cases);
      figures[fmt::format("{}", size.s)]["gate_cases_per_s"] = r.per_s();
      continue;
    }
    timed(0, warm, [&](uint64_t i) { return minimal.one_case(kernel.run, spec, i); });
    timed(0, warm, [&](uint64_t i) { return run_case(op, *be, worker, case_at(i), exec).verdict == Verdict::pass; });
    Rate bare = timed(seconds, min_cases, [&](uint64_t i) { return minimal.one_case(kernel.run, spec, i); });
    in_process.calls = 0, in_process.seconds = 0;
    Rate in = timed(seconds, min_cases,
                    [&](uint64_t i) { return run_case(op, *be, in_process, case_at(i), exec).verdict == Verdict::pass; });
    worker.reset_profile();
    Rate wk = timed(seconds, min_cases,
                    [&](uint64_t i) { return run_case(op, *be, worker, case_at(i), exec).verdict == Verdict::pass; });
    const WorkerProfile p = worker.profile();
    Rate in_p, wk_1, wk_b;  // planned: only where the gate plans
    WorkerProfile pb;
    if (planned) {
      in_p = timed(seconds, min_cases, [&](uint64_t i) { return planned_at(bare_runner, i, kBatchCases); },
                   int(kBatchCases));
      wk_1 = timed(seconds, min_cases, [&](uint64_t i) { return planned_at(worker, i, 1); });
      worker.reset_profile();
      wk_b = timed(seconds, min_cases, [&](uint64_t i) { return planned_at(worker, i, kBatchCases); },
                   int(kBatchCases));
      pb = worker.profile();
    }
    const Rate& gate_rate = gate_plans ? wk_b : wk;
    nlohmann::json& fig = figures[fmt::format("{}", size.s)];
    fig["gate_cases_per_s"] = gate_rate.per_s();
    fig["gate_path"] = gate_plans ? fmt::format("worker, planned, {} per exchange", kBatchCases)
                                                      : "worker, call by call";
    if (kind == BackendKind::cuda && size.s <= 64) {  // the ceiling (ceiling.h) on the same buffers and call
      ceiling::Loop loop({reinterpret_cast<float*>(minimal.buf[0].data), reinterpret_cast<float*>(minimal.buf[1].data),
                          reinterpret_cast<float*>(minimal.buf[2].data), size.s, size.s, size.s},
                         kernel.run, &minimal.call(), be->stream());
      timed(0, 50, [&](uint64_t) { return loop.plain_case(); });
      const Rate plain = timed(seconds, 100, [&](uint64_t) { return loop.plain_case(); });
      Rate graph;
      if (loop.graph_case()) graph = timed(seconds, 100, [&](uint64_t) { return loop.graph_case(); });
      fig["ceiling_plain_cases_per_s"] = plain.per_s();
      fig["ceiling_graph_cases_per_s"] = loop.graphed() ? nlohmann::json(graph.per_s()) : nlohmann::json(nullptr);
      fig["ratio_to_ceiling"] = gate_rate.per_s() / plain.per_s();
      if (loop.graphed()) fig["ratio_to_graphed_ceiling"] = gate_rate.per_s() / graph.per_s();
      ceiling_text += fmt::format(
          "- {}: the ceiling (device fill, one call, device FP64 reference, bound and comparison, three numbers "
          "back) runs {:.0f} cases/s plain, {}; the gate path ({}) runs {:.0f} cases/s: {:.3f} of the plain "
          "ceiling{}\n",
          size.name, plain.per_s(),
          loop.graphed() ? fmt::format("{:.0f} as a CUDA graph", graph.per_s()) : "the candidate could not be captured in a graph",
          fig["gate_path"].get<std::string>(), gate_rate.per_s(), gate_rate.per_s() / plain.per_s(),
          loop.graphed() ? fmt::format(", {:.3f} of the graphed one", gate_rate.per_s() / graph.per_s()) : "");
    }
    auto cell = [&](const Rate& r) { return planned ? fmt::format("{:.1f}", r.per_s()) : "–"; };
    table += fmt::format("| {} | {:.1f} | {:.1f} | {:.1f} ({:.2f}) | {} | {} | **{:.2f}** | {} |\n", size.name,
                         bare.per_s(), in.per_s(), wk.per_s(), wk.per_s() / in.per_s(), cell(wk_1), cell(wk_b),
                         gate_rate.per_s() / in.per_s(), cell(in_p));
    // Per call, in microseconds: where the worker's extra time goes.
    const double n = double(std::max(1L, p.calls)), us = 1e6;
    profile += fmt::format(
        "- {}: in process a call takes {:.0f} us, the rest of the case {:.0f} us per call; in the worker: harness "
        "synchronize {:.0f} us, round trip {:.0f} us (assay_run {:.0f}, waiting for its work {:.0f}, order check "
        "{:.0f}, messages and scheduling {:.0f}), the rest of the case {:.0f} us per call\n",
        size.name, us * in_process.seconds / std::max(1L, in_process.calls),
        us * (in.seconds - in_process.seconds) / std::max(1L, in_process.calls), us * p.before / n,
        us * p.round_trip / n, us * p.run / n, us * p.wait / n, us * p.check / n,
        us * (p.round_trip - p.run - p.wait - p.check) / n, us * (wk.seconds - p.before - p.round_trip) / n);
    if (planned) {
      const double nb = double(std::max(1L, pb.calls));
      profile += fmt::format(
          "  - planned, {} cases per exchange: harness synchronize {:.1f} us, round trip {:.0f} us (assay_run {:.0f}, waiting "
          "for its work {:.0f}, order check {:.0f}, messages and scheduling {:.0f}), the rest of the case {:.0f} us "
          "per call\n", kBatchCases, us * pb.before / nb, us * pb.round_trip / nb, us * pb.run / nb,
          us * pb.wait / nb, us * pb.check / nb, us * (pb.round_trip - pb.run - pb.wait - pb.check) / nb,
          us * (wk_b.seconds - pb.before - pb.round_trip) / nb);
    }
    if (size.s >= 512) {  // candidate alone and reference alone, each after a synchronize
      minimal.fill(7);
      be->synchronize();
      Rate cand = timed(seconds / 2, min_cases, [&](uint64_t) {
        kernel.run(&minimal.call());
        return be->synchronize().empty();
      });
      Rate ref = timed(seconds / 2, min_cases, [&](uint64_t) {
        gemm::reference(*be, minimal.c, minimal.buf[0].data, minimal.buf[1].data, nullptr);
        return be->synchronize().empty();
      });
      // The reference as a judged call runs it: blocks left on the device
      // and compared there with the candidate's C (Backend::compare).
      kernel.run(&minimal.call());
      const Tolerance judged_tol = gemm::tolerance(minimal.c, spec.compute, gemm::kDefaultScale, poison_bits(minimal.c.c_type));
      const Deadline no_deadline{};
      Rate judged = timed(seconds / 2, min_cases, [&](uint64_t) {
        const CompareStats s = gemm::compare_to_reference(*be, minimal.c, judged_tol, minimal.buf[2].data,
                                                          minimal.buf[0].data, minimal.buf[1].data, nullptr, no_deadline);
        return be->synchronize().empty() && verdict_of(s) == Verdict::pass;
      });
      // The candidate calls a case makes, of which the first three are judged
      // against a reference (call 4 repeats call 3: the same bits, no reference).
      const int calls = calls_per_case(exec), references = std::min(calls, 3);
      const double core = calls / cand.per_s() + references / ref.per_s();
      if (kind == BackendKind::cuda) {  // issue #18: against the candidate's calls + one reference at cuBLAS's rate
        auto& cuda = static_cast<CudaBackend&>(*be);
        const double dgemm = ceiling::dgemm_reference_seconds(cuda.cublas(), be->stream(), size.s, size.s, size.s,
                                                              size.s >= 4096 ? 5 : 50);
        const double target = calls / cand.per_s() + dgemm;
        fig["candidate_call_s"] = 1 / cand.per_s();
        fig["assay_reference_call_s"] = 1 / ref.per_s();
        fig["assay_judged_reference_call_s"] = 1 / judged.per_s();
        fig["dgemm_reference_s"] = dgemm;
        fig["calls_per_case"] = calls;
        fig["assay_case_s"] = 1 / gate_rate.per_s();
        fig["overhead"] = (1 / gate_rate.per_s()) / target;
        // The sum as written: three candidate calls.
        fig["overhead_three_calls"] = (1 / gate_rate.per_s()) / (3 / cand.per_s() + dgemm);
        ceiling_text += fmt::format(
            "- {}: an assay case takes {:.3f} ms; {} candidate calls ({:.3f} ms each) and one FP64 reference at "
            "cuBLAS's rate (two DGEMMs, {:.3f} ms) take {:.3f} ms: overhead {:.2f} (assay's own reference, bound and "
            "comparison on the device as a judged call runs them: {:.3f} ms a call; the whole reference brought to the "
            "host: {:.3f} ms)\n",
            size.name, 1e3 / gate_rate.per_s(), calls, 1e3 / cand.per_s(), 1e3 * dgemm, 1e3 * target,
            (1 / gate_rate.per_s()) / target, 1e3 / judged.per_s(), 1e3 / ref.per_s());
      }
      overhead += fmt::format(
          "- {}: candidate {:.3f} ms, reference (FP64 + bound, to host) {:.3f} ms per call; an assay case makes {} "
          "calls, {} of them against a reference, so its core work is {:.3f} ms; assay in a worker takes {:.3f} ms per case: overhead {:.2f} "
          "(minimal pipeline, one call: {:.3f} ms = {:.2f} of its own core)\n",
          size.name, 1e3 / cand.per_s(), 1e3 / ref.per_s(), calls, references, core * 1e3, 1e3 / wk.per_s(),
          (1 / wk.per_s()) / core, 1e3 / bare.per_s(), (1 / bare.per_s()) / (1 / cand.per_s() + 1 / ref.per_s()));
    }
  }
  // Two processes on one GPU take turns (time slicing): how long does the
  // harness's first small piece of work take right after a worker call,
  // against the same work right after other harness work?
  std::string turns;
  if (kind == BackendKind::cuda && !gate_only) {
    Minimal m(*be, square(spec, 32, 1));
    m.fill(1);
    auto harness_work = [&] {
      be->fill_pattern(m.buf[2], 0, 4);
      return be->synchronize().empty();
    };
    Rate after_harness = timed(1, 200, [&](uint64_t) { return harness_work(); });
    double after_worker_s = 0;
    const int n = 500;
    for (int i = 0; i < n; ++i) {
      worker.run(m.call(), 10);
      auto t0 = Clock::now();
      harness_work();
      after_worker_s += since(t0);
    }
    // The same after a worker call, but copies only (upload A, read C back):
    // does work on the copy engines make the GPU take turns as kernels do?
    std::vector<std::byte> host_a(m.buf[0].bytes), host_c(m.buf[2].bytes);
    auto harness_copies = [&] {
      be->upload(m.buf[0], host_a.data());
      be->download(m.buf[2], host_c.data());
      return be->synchronize().empty();
    };
    Rate copies_after_harness = timed(1, 200, [&](uint64_t) { return harness_copies(); });
    double copies_after_worker_s = 0;
    for (int i = 0; i < n; ++i) {
      worker.run(m.call(), 10);
      auto t0 = Clock::now();
      harness_copies();
      copies_after_worker_s += since(t0);
    }
    // And the other way: the worker's wait for its call's work, after the
    // harness's fill (kernels) or after copies only.
    auto worker_wait_after = [&](auto&& step) {
      worker.reset_profile();
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) {
        step();
        worker.run(m.call(), 10);
      }
      const double loop = since(t0) / n;
      return std::pair{1e6 * worker.profile().wait / n, 1e6 * loop};
    };
    auto [wait_fill, loop_fill] = worker_wait_after(harness_work);
    auto [wait_copies, loop_copies] = worker_wait_after(harness_copies);
    turns = fmt::format(
        "\nTaking turns on the GPU: a fill and synchronize of the harness takes {:.0f} us after other harness "
        "work ({:.0f} times), {:.0f} us right after a worker call ({} times).\n"
        "Copies only (upload A, download C, synchronize): {:.0f} us after other harness work, {:.0f} us right "
        "after a worker call.\n"
        "The worker's wait for its call's work: {:.0f} us after a harness fill (loop {:.0f} us per call), {:.0f} us "
        "after harness copies only (loop {:.0f} us per call).\n",
        1e6 / after_harness.per_s(), after_harness.cases, 1e6 * after_worker_s / n, n,
        1e6 / copies_after_harness.per_s(), 1e6 * copies_after_worker_s / n, wait_fill, loop_fill, wait_copies,
        loop_copies);
  }
  if (!ceiling_text.empty()) ceiling_text = "\nAgainst the ceiling (issue #18):\n\n" + ceiling_text;
  std::string report = table + "\n" + overhead + ceiling_text + "\nPer call (microseconds):\n\n" + profile + turns +
                       fmt::format("\nMeasured with {}.\n", build_line());
  std::fputs(report.c_str(), stdout);
  if (!out.empty()) std::ofstream(out) << report;
  if (!json_out.empty()) {
    nlohmann::json j;
    std::string gpu = "host";
    if (kind == BackendKind::cuda) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) gpu = prop.name;
    }
    const std::time_t now = std::time(nullptr);
    char date[16];
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    j["gpu"] = gpu, j["date"] = date, j["commit"] = build_commit(), j["build"] = build_line();
    j["kernel"] = spec.name, j["seconds_per_measurement"] = seconds;
    auto at = [&](const char* size, const char* key) -> nlohmann::json {
      return figures.contains(size) && figures[size].contains(key) ? figures[size][key] : nlohmann::json(nullptr);
    };
    j["tiny_ratio_to_ceiling"] = at("32", "ratio_to_ceiling");
    j["tiny_ratio_to_graphed_ceiling"] = at("32", "ratio_to_graphed_ceiling");
    j["medium_overhead"] = at("512", "overhead");
    j["large_overhead"] = at("4096", "overhead");
    j["targets"] = {{"tiny_ratio_to_ceiling", ">= 0.40"}, {"medium_overhead", "<= 2.0"}, {"large_overhead", "<= 1.25"}};
    auto met = [&](const char* key, bool at_least, double limit) -> nlohmann::json {
      if (!j[key].is_number()) return nullptr;
      return at_least ? j[key].get<double>() >= limit : j[key].get<double>() <= limit;
    };
    j["met"] = {{"tiny_ratio_to_ceiling", met("tiny_ratio_to_ceiling", true, 0.40)},
                {"medium_overhead", met("medium_overhead", false, 2.0)},
                {"large_overhead", met("large_overhead", false, 1.25)}};
    j["figures"] = figures;
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  return assay::bench_cli::guarded(argv[0], [&] { return run_bench(argc, argv); });
}
