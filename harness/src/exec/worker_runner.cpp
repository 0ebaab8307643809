#include "exec/worker_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "exec/worker_protocol.h"

namespace assay {
namespace fs = std::filesystem;

namespace {
// poll() on one socket for up to timeout_s. A signal cuts poll() short
// whatever its handler's flags (a profiler's tick, a child's exit): wait out
// the rest, so that EINTR is neither taken for an answer nor for silence.
int poll_in(int fd, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd p{fd, POLLIN, 0};
  int ready;
  do {
    const double left = std::max(0.0, std::chrono::duration<double>(until - Clock::now()).count());
    ready = poll(&p, 1, int(std::min(std::ceil(left * 1000.0), 2.0e9)));
  } while (ready < 0 && errno == EINTR);
  return ready;
}
}  // namespace

fs::path worker_executable() {
  if (const char* e = std::getenv("ASSAY_WORKER")) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (fs::path p : {exe / "assay-worker", exe.parent_path() / "assay-worker"})
    if (fs::exists(p)) return p;
  throw InfraError("cannot find assay-worker next to the assay binary; set ASSAY_WORKER");
}

WorkerRunner::WorkerRunner(Backend& backend, WorkerOptions opt) : backend_(backend), opt_(std::move(opt)) {
  // Before device memory goes back to the driver, the worker must have let go
  // of its mappings of it. It closes them and stays: stopping it would lose
  // what the candidate keeps between calls (a leak, a cache), and verdicts
  // would depend on when memory ran short.
  unmap_hook_ = backend_.add_unmap_hook([this](const std::vector<uint64_t>& ids) { forget(ids); });
}

WorkerRunner::~WorkerRunner() {
  backend_.remove_unmap_hook(unmap_hook_);
  stop();
}

namespace {

// In the child, between fork and exec: only async-signal-safe calls.
// args: the worker's argv after the program name, nullptr-terminated.
[[noreturn]] void exec_worker(int sock, const char* exe, char* const* argv, const char* log, bool cuda, rlim_t memory,
                              rlim_t cpu) {
  setpgid(0, 0);  // the worker and anything it forks die together
  if (sock != 3) {
    dup2(sock, 3);
  } else {
    fcntl(3, F_SETFD, 0);
  }
  int devnull = open("/dev/null", O_RDWR);
  dup2(devnull, 0);
  int out = log[0] ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : devnull;
  dup2(out < 0 ? devnull : out, 1);
  dup2(out < 0 ? devnull : out, 2);
  close_range(4, ~0U, 0);  // nothing of the harness's is inherited but the socket
  // CUDA reserves far more address space than it uses: bound the memory a
  // cuda worker writes to (RLIMIT_DATA), not its address space.
  rlimit mem{memory, memory}, cpu_limit{cpu, cpu}, core{0, 0}, files{cuda ? 256u : 64u, cuda ? 256u : 64u};
  setrlimit(cuda ? RLIMIT_DATA : RLIMIT_AS, &mem);
  setrlimit(RLIMIT_CPU, &cpu_limit);
  setrlimit(RLIMIT_CORE, &core);
  setrlimit(RLIMIT_NOFILE, &files);
  execv(exe, argv);
  _exit(127);
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("killed by signal {} (SIG{}: {})", sig, abbrev ? abbrev : "?", strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("the process exited with status {} inside the call", WEXITSTATUS(status));
  return "the process stopped";
}

}  // namespace

std::string WorkerRunner::start() {
  const fs::path exe = worker_executable();
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    throw InfraError(fmt::format("socketpair: {}", std::strerror(errno)));
  const bool cuda = backend_.kind() == BackendKind::cuda;
  std::vector<std::string> args = {"assay-worker", "3", opt_.library.string(), opt_.entry, cuda ? "cuda" : "host"};
  if (cuda) args.push_back(std::to_string(backend_.device().device_id));
  if (cuda) args.push_back(std::to_string(opt_.device_memory_limit));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = opt_.log_file.string();
  pid_t pid = fork();
  if (pid < 0) throw InfraError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0)
    exec_worker(pair[1], exe.c_str(), argv.data(), log.c_str(), cuda, rlim_t(opt_.memory_limit),
                rlim_t(opt_.cpu_limit_s));
  close(pair[1]);
  pid_ = pid, sock_ = pair[0], ++started_;
  wire::Reply ready;
  if (poll_in(sock_, 60) <= 0 || !wire::recv_message(sock_, &ready, sizeof ready, nullptr, 0, nullptr)) {
    RunStatus s = reap("start-up");
    return "the worker did not start: " + s.failure;
  }
  std::string said(ready.message, strnlen(ready.message, sizeof ready.message));
  device_out_of_memory_ = ready.code == wire::kDeviceOutOfMemory;
  device_unavailable_ = device_out_of_memory_ || ready.code == wire::kDeviceUnavailable;
  if (ready.code != 0) {
    stop();
    return said;
  }
  static std::once_flag told;  // e.g. a limit the worker cannot enforce: once per run, not per worker
  if (said.rfind("ready; ", 0) == 0) std::call_once(told, [&] { std::fprintf(stderr, "assay: %s\n", said.c_str() + 7); });
  return {};
}

void WorkerRunner::forget(const std::vector<uint64_t>& ids) {
  for (size_t at = 0; at < ids.size() && pid_ >= 0; at += wire::kMaxForget) {
    wire::CallRequest req;
    req.kind = wire::RequestKind::forget;
    req.num_forget = int32_t(std::min<size_t>(ids.size() - at, wire::kMaxForget));
    std::copy(ids.begin() + long(at), ids.begin() + long(at) + req.num_forget, req.forget_ids);
    wire::Reply reply;
    if (!wire::send_message(sock_, &req, sizeof req, nullptr, 0) || poll_in(sock_, 30) <= 0 ||
        !wire::recv_message(sock_, &reply, sizeof reply, nullptr, 0, nullptr) || reply.code != 0)
      stop();  // no answer: stopping it closes its mappings for sure
  }
}

void WorkerRunner::stop() {
  if (pid_ < 0) return;
  close(sock_);  // the worker reads EOF and leaves
  int status;
  for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (waitpid(pid_, &status, WNOHANG) == 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1, sock_ = -1;
}

RunStatus WorkerRunner::reap(const char* during) {
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 200 && (done = waitpid(pid_, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::string how;
  if (done == pid_) {
    how = describe_exit(status);
    kill(-pid_, SIGKILL);  // whatever it left behind
  } else {
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    how = "it closed its connection and was killed";
  }
  close(sock_);
  pid_ = -1, sock_ = -1;
  return RunStatus{RunEnd::crashed, 0, fmt::format("worker died during {}: {}", during, how)};
}

RunStatus WorkerRunner::run(const assay_call& call, double timeout_s) {
  const CallStep step{&call, timeout_s, {}};
  std::vector<RunStatus> out;
  run_steps(backend_, std::span<const CallStep>(&step, 1), out);
  return out.front();
}

// Requests go out ahead of the worker by at most this many: it finds the next
// one waiting when it finishes a call, and neither side's socket queue (ten
// messages by default) can fill while the other waits on it.
constexpr size_t kRequestsAhead = 4;

void WorkerRunner::run_steps(Backend&, std::span<const CallStep> steps, std::vector<RunStatus>& out) {
  if (steps.empty()) return;
  if (pid_ < 0) {
    if (std::string why = start(); !why.empty()) {
      // Not the candidate's doing (another process may hold the memory): no verdict for it.
      if (device_out_of_memory_) throw OutOfMemory("the worker cannot set up the device: " + why);
      if (device_unavailable_) throw InfraError("the worker cannot set up the device: " + why);
      return out.push_back(RunStatus{RunEnd::crashed, 0, why});
    }
  }
  struct Request {
    wire::CallRequest req;
    int fds[wire::kMaxBuffers];
  };
  std::vector<Request> requests(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const assay_call& call = *steps[i].call;
    wire::CallRequest& req = requests[i].req;
    std::snprintf(req.op, sizeof req.op, "%s", call.op);
    req.num_inputs = call.num_inputs, req.num_outputs = call.num_outputs, req.num_scalars = call.num_scalars;
    if (call.num_inputs + call.num_outputs > wire::kMaxTensors || call.num_scalars > wire::kMaxScalars ||
        steps[i].copies.size() > size_t(wire::kMaxCopies))
      throw InfraError("call too large for the worker protocol");
    std::copy(call.scalars, call.scalars + call.num_scalars, req.scalars);
    describe_buffers(steps[i], req, requests[i].fds);
  }
  // The harness's fills and copies must be done before another process reads them.
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (std::string e = backend_.synchronize(); !e.empty()) throw InfraError("before a worker call: " + e);
  const auto t1 = Clock::now();
  const bool host = backend_.kind() == BackendKind::host;
  size_t sent = 0;
  bool broken = false;  // a send failed: the worker is gone; what it answered is still read
  auto send_next = [&] {
    const Request& r = requests[sent];
    if (!wire::send_message(sock_, &r.req, sizeof r.req, r.fds, host ? r.req.num_buffers : 0)) broken = true;
    else ++sent;
  };
  while (!broken && sent < steps.size() && sent < kRequestsAhead) send_next();
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const size_t first = out.size();
  for (size_t i = 0; i < sent; ++i) {
    // Call i starts when the worker has answered call i - 1.
    RunStatus s = await_reply(steps[i].timeout_s);
    const bool worker_gone = s.end == RunEnd::crashed || s.end == RunEnd::timed_out;
    out.push_back(std::move(s));
    if (worker_gone) break;  // the calls after it were not made
    if (!broken && sent < steps.size()) send_next();
  }
  if (out.size() == first) out.push_back(reap("the call"));  // not even the first request went out
  profile_.calls += long(out.size() - first), profile_.before += seconds(t0, t1);
  profile_.round_trip += seconds(t1, Clock::now());
}

RunStatus WorkerRunner::await_reply(double timeout_s) {
  // The run's deadline may come first: then the call is stopped, not a hang.
  const bool clipped = deadline_.left() < timeout_s;
  const double wait_s = clipped ? deadline_.left() : timeout_s;
  int ready = poll_in(sock_, wait_s);
  if (ready == 0) {
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    close(sock_);
    pid_ = -1, sock_ = -1;
    if (clipped) throw DeadlineReached("the call was still running at the deadline; the worker was killed");
    return RunStatus{RunEnd::timed_out, 0, fmt::format("no answer within {:.3g} s; the worker was killed", timeout_s)};
  }
  wire::Reply reply;
  if (!wire::recv_message(sock_, &reply, sizeof reply, nullptr, 0, nullptr)) return reap("the call");
  profile_.run += reply.run_s, profile_.wait += reply.wait_s, profile_.check += reply.check_s;
  std::string message(reply.message, strnlen(reply.message, sizeof reply.message));
  switch (reply.end) {
    case wire::CallEnd::returned: return RunStatus{RunEnd::returned, reply.code, message};
    case wire::CallEnd::device_error: return RunStatus{RunEnd::device_error, reply.code, message};
    case wire::CallEnd::unordered_output: return RunStatus{RunEnd::unordered_output, reply.code, message};
    case wire::CallEnd::out_of_memory:
      stop();  // the requests sent ahead are void: a fresh worker takes the case again
      throw OutOfMemory("in the worker: " + message);
    case wire::CallEnd::fatal: break;
  }
  stop();  // it is leaving anyway; a fresh worker takes the next call
  return RunStatus{RunEnd::crashed, reply.code, message};
}

namespace {

// Seconds thread `tid` of process `pid` has waited on a runqueue so far (the
// second field of its schedstat), or nullopt where the kernel does not say.
std::optional<double> runqueue_wait_s(pid_t pid, pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", int(pid), int(tid));
  FILE* f = std::fopen(path, "r");
  if (!f) return std::nullopt;
  unsigned long long run = 0, wait = 0;
  const int got = std::fscanf(f, "%llu %llu", &run, &wait);
  std::fclose(f);
  if (got != 2) return std::nullopt;
  return double(wait) * 1e-9;
}

}  // namespace

BatchTimes WorkerRunner::time_batch(const TimedBatch& b) {
  BatchTimes out;
  if (b.calls < 1 || b.calls > wire::kMaxTimed || b.sets.empty() || b.sets.size() > size_t(wire::kMaxSets))
    throw InfraError("a timed batch outside the worker protocol's limits");
  if (pid_ < 0) {
    if (std::string why = start(); !why.empty()) {
      if (device_out_of_memory_) throw OutOfMemory("the worker cannot set up the device: " + why);
      if (device_unavailable_) throw InfraError("the worker cannot set up the device: " + why);
      out.status = RunStatus{RunEnd::crashed, 0, why};
      return out;
    }
  }
  CallStep step{b.call, b.timeout_s, {}};
  std::vector<int32_t> begin;
  for (const auto& set : b.sets) {
    begin.push_back(int32_t(step.copies.size()));
    step.copies.insert(step.copies.end(), set.begin(), set.end());
  }
  begin.push_back(int32_t(step.copies.size()));
  if (step.copies.size() > size_t(wire::kMaxCopies)) throw InfraError("a timed batch with too many copies");
  wire::CallRequest req;
  req.kind = wire::RequestKind::timed;
  const assay_call& call = *b.call;
  std::snprintf(req.op, sizeof req.op, "%s", call.op);
  req.num_inputs = call.num_inputs, req.num_outputs = call.num_outputs, req.num_scalars = call.num_scalars;
  if (call.num_inputs + call.num_outputs > wire::kMaxTensors || call.num_scalars > wire::kMaxScalars)
    throw InfraError("call too large for the worker protocol");
  std::copy(call.scalars, call.scalars + call.num_scalars, req.scalars);
  int fds[wire::kMaxBuffers];
  const Buffer extra[] = {b.capture};
  int index[1] = {-1};
  describe_buffers(step, req, fds, extra, index);
  req.timed_calls = b.calls, req.num_sets = int32_t(b.sets.size());
  std::copy(begin.begin(), begin.end(), req.set_begin);
  req.capture_buffer = index[0], req.flush_bytes = b.flush_bytes;
  req.capture_stride = b.capture_stride, req.no_call = b.no_call ? 1 : 0;
  if (std::string e = backend_.synchronize(); !e.empty()) throw InfraError("before a timed batch: " + e);
  using Clock = std::chrono::steady_clock;
  const pid_t self = pid_t(gettid()), worker = pid_t(pid_);  // the worker serves on its main thread
  const std::optional<double> worker_wait0 = runqueue_wait_s(worker, worker), own_wait0 = runqueue_wait_s(getpid(), self);
  const auto t0 = Clock::now();
  if (!wire::send_message(sock_, &req, sizeof req, fds, backend_.kind() == BackendKind::host ? req.num_buffers : 0)) {
    out.status = reap("a timed batch");
    return out;
  }
  out.status = await_reply(b.timeout_s);
  if (out.status.end == RunEnd::crashed && pid_ < 0) return out;  // gone: no timings follow
  if (out.status.end == RunEnd::timed_out) return out;
  wire::Timings t;
  if (pid_ < 0 || poll_in(sock_, 10) <= 0 || !wire::recv_message(sock_, &t, sizeof t, nullptr, 0, nullptr)) {
    if (pid_ >= 0) out.status = reap("a timed batch");
    return out;
  }
  out.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::optional<double> worker_wait1 = runqueue_wait_s(worker, worker), own_wait1 = runqueue_wait_s(getpid(), self);
  if (worker_wait0 && worker_wait1 && own_wait0 && own_wait1)
    out.wait_s = std::max(0.0, *worker_wait1 - *worker_wait0) + std::max(0.0, *own_wait1 - *own_wait0);
  out.span_s = t.span_s;
  out.call_s.assign(t.call_s, t.call_s + std::clamp(t.calls, 0, wire::kMaxTimed));
  return out;
}

void WorkerRunner::describe_buffers(const CallStep& step, wire::CallRequest& req, int* fds,
                                    std::span<const Buffer> extra, int* extra_index) {
  uint64_t keys[wire::kMaxBuffers];  // fd or allocation id: one entry per distinct buffer
  auto index_of = [&](const Buffer& b) {
    const uint64_t key = b.fd >= 0 ? uint64_t(b.fd) : b.id;
    int index = 0;
    while (index < req.num_buffers && keys[index] != key) ++index;
    if (index < req.num_buffers) return index;
    if (index == wire::kMaxBuffers) throw InfraError("a call with too many buffers for the worker protocol");
    keys[index] = key, fds[index] = b.fd, req.buffer_ids[index] = b.id;
    req.buffer_bytes[index] = b.bytes;
    if (b.fd < 0 && !backend_.ipc_handle(b, req.ipc_handles[index]))
      throw InfraError("this backend cannot share its buffers with a worker");
    ++req.num_buffers;
    return index;
  };
  const assay_call& call = *step.call;
  for (int i = 0; i < call.num_inputs + call.num_outputs; ++i) {
    const DLTensor& t = i < call.num_inputs ? call.inputs[i] : call.outputs[i - call.num_inputs];
    std::optional<Buffer> owner = backend_.owner_of(t.data);
    if (!owner || t.ndim > wire::kMaxDims) throw InfraError("a tensor of the call is not in a shareable buffer");
    wire::Tensor& w = req.tensors[i];
    w.ndim = t.ndim;
    std::copy(t.shape, t.shape + t.ndim, w.shape);
    if (t.strides) std::copy(t.strides, t.strides + t.ndim, w.strides), w.has_strides = 1;
    w.code = t.dtype.code, w.bits = t.dtype.bits, w.lanes = t.dtype.lanes;
    w.byte_offset = t.byte_offset;
    w.buffer = index_of(*owner);
    w.data_offset = uint64_t(static_cast<const std::byte*>(t.data) - owner->data);
  }
  for (const BufferCopy& c : step.copies) {
    if (c.dst.bytes != c.src.bytes) throw InfraError("a copy between buffers of different sizes");
    wire::Copy& w = req.copies[req.num_copies++];
    w.dst = index_of(c.dst), w.src = index_of(c.src), w.bytes = c.dst.bytes;
  }
  for (size_t i = 0; i < extra.size(); ++i) extra_index[i] = index_of(extra[i]);
}

}  // namespace assay
