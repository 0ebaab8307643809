#include "exec/worker_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "exec/worker_protocol.h"

namespace assay {
namespace fs = std::filesystem;

fs::path worker_executable() {
  if (const char* e = std::getenv("ASSAY_WORKER")) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (fs::path p : {exe / "assay-worker", exe.parent_path() / "assay-worker"})
    if (fs::exists(p)) return p;
  throw InfraError("cannot find assay-worker next to the assay binary; set ASSAY_WORKER");
}

WorkerRunner::WorkerRunner(Backend& backend, WorkerOptions opt) : backend_(backend), opt_(std::move(opt)) {
  if (backend.kind() != BackendKind::host)
    throw InfraError("out-of-process runs of cuda kernels are not implemented yet; use --isolation in-process");
}

WorkerRunner::~WorkerRunner() { stop(); }

namespace {

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_worker(int sock, const char* exe, const char* sock_arg, const char* lib, const char* entry,
                              const char* log, rlim_t memory, rlim_t cpu) {
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
  rlimit as{memory, memory}, cpu_limit{cpu, cpu}, core{0, 0}, files{64, 64};
  setrlimit(RLIMIT_AS, &as);
  setrlimit(RLIMIT_CPU, &cpu_limit);
  setrlimit(RLIMIT_CORE, &core);
  setrlimit(RLIMIT_NOFILE, &files);
  char* const argv[] = {const_cast<char*>("assay-worker"), const_cast<char*>(sock_arg), const_cast<char*>(lib),
                        const_cast<char*>(entry), nullptr};
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
  const std::string lib = opt_.library.string(), log = opt_.log_file.string();
  pid_t pid = fork();
  if (pid < 0) throw InfraError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0)
    exec_worker(pair[1], exe.c_str(), "3", lib.c_str(), opt_.entry.c_str(), log.c_str(), rlim_t(opt_.memory_limit),
                rlim_t(opt_.cpu_limit_s));
  close(pair[1]);
  pid_ = pid, sock_ = pair[0], ++started_;
  wire::Reply ready;
  pollfd p{sock_, POLLIN, 0};
  if (poll(&p, 1, 60000) <= 0 || !wire::recv_message(sock_, &ready, sizeof ready, nullptr, 0, nullptr)) {
    RunStatus s = reap("start-up");
    return "the worker did not start: " + s.failure;
  }
  if (ready.code != 0) {
    std::string why(ready.message, strnlen(ready.message, sizeof ready.message));
    stop();
    return why;
  }
  return {};
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
  if (pid_ < 0) {
    std::string why = start();
    if (!why.empty()) return RunStatus{RunEnd::crashed, 0, why};
  }
  wire::CallRequest req;
  std::snprintf(req.op, sizeof req.op, "%s", call.op);
  req.num_inputs = call.num_inputs, req.num_outputs = call.num_outputs, req.num_scalars = call.num_scalars;
  if (call.num_inputs + call.num_outputs > wire::kMaxTensors || call.num_scalars > wire::kMaxScalars)
    throw InfraError("call too large for the worker protocol");
  std::copy(call.scalars, call.scalars + call.num_scalars, req.scalars);
  int fds[wire::kMaxTensors];
  for (int i = 0; i < call.num_inputs + call.num_outputs; ++i) {
    const DLTensor& t = i < call.num_inputs ? call.inputs[i] : call.outputs[i - call.num_inputs];
    std::optional<Buffer> owner = backend_.owner_of(t.data);
    if (!owner || t.ndim > wire::kMaxDims) throw InfraError("a tensor of the call is not in a shareable buffer");
    int index = 0;
    while (index < req.num_buffers && fds[index] != owner->fd) ++index;
    if (index == req.num_buffers) fds[req.num_buffers] = owner->fd, req.buffer_bytes[req.num_buffers++] = owner->bytes;
    wire::Tensor& w = req.tensors[i];
    w.ndim = t.ndim;
    std::copy(t.shape, t.shape + t.ndim, w.shape);
    if (t.strides) std::copy(t.strides, t.strides + t.ndim, w.strides), w.has_strides = 1;
    w.code = t.dtype.code, w.bits = t.dtype.bits, w.lanes = t.dtype.lanes;
    w.byte_offset = t.byte_offset;
    w.buffer = index;
    w.data_offset = uint64_t(static_cast<const std::byte*>(t.data) - owner->data);
  }
  if (!wire::send_message(sock_, &req, sizeof req, fds, req.num_buffers)) return reap("the call");
  pollfd p{sock_, POLLIN, 0};
  int ready = poll(&p, 1, int(std::min(timeout_s * 1000.0, 2.0e9)));
  if (ready == 0) {
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    close(sock_);
    pid_ = -1, sock_ = -1;
    return RunStatus{RunEnd::timed_out, 0, fmt::format("no answer within {:.3g} s; the worker was killed", timeout_s)};
  }
  wire::Reply reply;
  if (!wire::recv_message(sock_, &reply, sizeof reply, nullptr, 0, nullptr)) return reap("the call");
  std::string message(reply.message, strnlen(reply.message, sizeof reply.message));
  return RunStatus{RunEnd::returned, reply.code, message};
}

}  // namespace assay
