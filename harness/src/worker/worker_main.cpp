// assay-worker: the process that runs an untrusted candidate. It owns nothing
// the verdict depends on: it maps the case's buffers (shared with the harness),
// calls assay_run, waits for its work and reports how it ended. If the
// candidate crashes, hangs or scribbles over memory, only this process
// suffers; the harness starts a fresh one.
//
//   assay-worker SOCKET_FD LIBRARY ENTRY host
//   assay-worker SOCKET_FD LIBRARY ENTRY cuda DEVICE MEMORY_LIMIT_BYTES
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "assay/abi.h"
#include "worker/worker_device.h"

namespace {

using namespace assay::wire;
using assay::worker::Bases;
using assay::worker::WorkerDevice;

void reply(int sock, int code, CallEnd end, const std::string& message, Reply r = {}) {
  r.code = code, r.end = end;
  std::snprintf(r.message, sizeof r.message, "%s", message.c_str());
  if (!send_message(sock, &r, sizeof r, nullptr, 0)) std::_Exit(2);
}

// The request comes from the harness, but check it anyway: a bad index here
// would be a crash blamed on the candidate.
bool well_formed(const CallRequest& req) {
  if (req.num_buffers < 0 || req.num_buffers > kMaxBuffers || req.num_inputs < 0 || req.num_outputs < 0 ||
      req.num_inputs + req.num_outputs > kMaxTensors || req.num_scalars < 0 || req.num_scalars > kMaxScalars ||
      req.num_copies < 0 || req.num_copies > kMaxCopies)
    return false;
  for (int i = 0; i < req.num_copies; ++i) {
    const Copy& c = req.copies[i];
    if (c.dst < 0 || c.dst >= req.num_buffers || c.src < 0 || c.src >= req.num_buffers || c.dst == c.src ||
        c.bytes > req.buffer_bytes[c.dst] || c.bytes > req.buffer_bytes[c.src])
      return false;
  }
  for (int i = 0; i < req.num_inputs + req.num_outputs; ++i) {
    const Tensor& t = req.tensors[i];
    if (t.buffer < 0 || t.buffer >= req.num_buffers || t.ndim < 0 || t.ndim > kMaxDims ||
        t.data_offset >= req.buffer_bytes[t.buffer])
      return false;
  }
  return true;
}

// Serves one call; returns false when the worker must leave (context lost).
bool serve(int sock, assay_run_fn run, WorkerDevice& dev, const CallRequest& req, const int* fds, int nfds) {
  Bases base = {};
  std::string why = well_formed(req) ? dev.map(req, fds, nfds, base) : "worker: malformed call request";
  bool stay = true;
  if (!why.empty()) {
    reply(sock, -1, CallEnd::returned, why);
  } else {
    DLTensor tensors[kMaxTensors] = {};
    int64_t shapes[kMaxTensors][kMaxDims], strides[kMaxTensors][kMaxDims];
    for (int i = 0; i < req.num_inputs + req.num_outputs; ++i) {
      const Tensor& t = req.tensors[i];
      std::memcpy(shapes[i], t.shape, sizeof t.shape);
      std::memcpy(strides[i], t.strides, sizeof t.strides);
      tensors[i] = DLTensor{static_cast<char*>(base[t.buffer]) + t.data_offset, dev.device(), t.ndim,
                            DLDataType{t.code, t.bits, t.lanes}, shapes[i], t.has_strides ? strides[i] : nullptr,
                            t.byte_offset};
    }
    char op[sizeof req.op + 1] = {};
    std::memcpy(op, req.op, sizeof req.op);
    assay_call call{ASSAY_ABI_VERSION, op, req.num_inputs, tensors, req.num_outputs, tensors + req.num_inputs,
                    req.num_scalars, req.scalars, dev.stream(), nullptr, 0};
    using Clock = std::chrono::steady_clock;
    dev.before_call(req, base);
    const auto t0 = Clock::now();
    int code = run(&call);
    const auto t1 = Clock::now();
    std::string message;
    double check_s = 0;
    CallEnd end = dev.after_call(req, base, message, check_s);
    if (end != CallEnd::fatal && dev.memory_was_short(code != 0 || end != CallEnd::returned)) {
      message = "the device's memory was full during the call" + (message.empty() ? "" : ": " + message);
      end = CallEnd::out_of_memory;
    }
    Reply timing;
    timing.run_s = float(std::chrono::duration<double>(t1 - t0).count());
    timing.wait_s = float(std::chrono::duration<double>(Clock::now() - t1).count() - check_s);
    timing.check_s = float(check_s);
    reply(sock, code, end, message, timing);
    stay = end != CallEnd::fatal;
  }
  dev.unmap(req, base);
  for (int i = 0; i < nfds; ++i) close(fds[i]);
  return stay;
}

}  // namespace

int main(int argc, char** argv) {
  const bool cuda = argc == 7 && std::strcmp(argv[4], "cuda") == 0;
  if (!cuda && !(argc == 5 && std::strcmp(argv[4], "host") == 0)) {
    std::fprintf(stderr, "usage: assay-worker SOCKET_FD LIBRARY ENTRY host|cuda DEVICE LIMIT (started by assay)\n");
    return 2;
  }
  const int sock = std::atoi(argv[1]);
  std::string why;
  bool out_of_memory = false;
  std::unique_ptr<WorkerDevice> dev =
      cuda ? assay::worker::cuda_device(std::atoi(argv[5]), std::strtoull(argv[6], nullptr, 10), why, out_of_memory)
           : assay::worker::host_device();
  if (!dev) {  // the device, not the kernel: e.g. its memory is full right now
    reply(sock, out_of_memory ? kDeviceOutOfMemory : kDeviceUnavailable, CallEnd::returned, why);
    return 0;
  }
  void* handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    reply(sock, -1, CallEnd::returned, std::string("cannot load ") + argv[2] + ": " + dlerror());
    return 0;
  }
  auto run = reinterpret_cast<assay_run_fn>(dlsym(handle, argv[3]));
  if (!run) {
    reply(sock, -1, CallEnd::returned, std::string("entry '") + argv[3] + "' not found in " + argv[2]);
    return 0;
  }
  reply(sock, 0, CallEnd::returned, dev->note().empty() ? "ready" : "ready; " + dev->note());
  for (;;) {
    CallRequest req;
    int fds[kMaxBuffers], nfds = 0;
    if (!recv_message(sock, &req, sizeof req, fds, kMaxBuffers, &nfds)) return 0;  // harness gone or done
    if (req.kind == RequestKind::forget) {  // the harness is about to free these buffers
      for (int i = 0; i < nfds; ++i) close(fds[i]);
      const bool ok = req.num_forget >= 0 && req.num_forget <= kMaxForget;
      if (ok) dev->forget(req.forget_ids, req.num_forget);
      reply(sock, ok ? 0 : -1, CallEnd::returned, ok ? "" : "worker: malformed forget request");
      continue;
    }
    if (!serve(sock, run, *dev, req, fds, nfds)) std::_Exit(0);  // no teardown of a lost context
  }
}
