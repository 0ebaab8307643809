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

bool well_formed_batch(const CallRequest& req) {
  if (req.timed_calls < 1 || req.timed_calls > kMaxTimed || req.num_sets < 1 || req.num_sets > kMaxSets ||
      req.capture_buffer < 0 || req.capture_buffer >= req.num_buffers || req.flush_bytes > (uint64_t(1) << 34))
    return false;
  for (int s = 0; s < req.num_sets; ++s)
    if (req.set_begin[s] < 0 || req.set_begin[s] > req.set_begin[s + 1]) return false;
  if (req.set_begin[req.num_sets] != req.num_copies) return false;
  // The captures must fit: each call's outputs at i * stride.
  uint64_t outputs = 0;
  bool seen[kMaxBuffers] = {};
  for (int i = req.num_inputs; i < req.num_inputs + req.num_outputs; ++i)
    if (!seen[req.tensors[i].buffer]) seen[req.tensors[i].buffer] = true, outputs += req.buffer_bytes[req.tensors[i].buffer];
  return outputs <= req.capture_stride &&
         uint64_t(req.timed_calls) * req.capture_stride <= req.buffer_bytes[req.capture_buffer];
}

// The views of one call's tensors over the mapped buffers.
struct Views {
  DLTensor tensors[kMaxTensors] = {};
  int64_t shapes[kMaxTensors][kMaxDims], strides[kMaxTensors][kMaxDims];
  char op[sizeof(CallRequest::op) + 1] = {};
  Views(const CallRequest& req, const Bases& base, DLDevice device) {
    for (int i = 0; i < req.num_inputs + req.num_outputs; ++i) {
      const Tensor& t = req.tensors[i];
      std::memcpy(shapes[i], t.shape, sizeof t.shape);
      std::memcpy(strides[i], t.strides, sizeof t.strides);
      tensors[i] = DLTensor{static_cast<char*>(base[t.buffer]) + t.data_offset, device, t.ndim,
                            DLDataType{t.code, t.bits, t.lanes}, shapes[i], t.has_strides ? strides[i] : nullptr,
                            t.byte_offset};
    }
    std::memcpy(op, req.op, sizeof req.op);
  }
  assay_call call(const CallRequest& req, void* stream) {
    return assay_call{ASSAY_ABI_VERSION, op, req.num_inputs, tensors, req.num_outputs, tensors + req.num_inputs,
                      req.num_scalars, req.scalars, stream, nullptr, 0};
  }
};

// A timed batch (assay bench; the steps are in worker_protocol.h). Replies,
// then sends the Timings. Returns false when the worker must leave.
bool serve_batch(int sock, assay_run_fn run, WorkerDevice& dev, const CallRequest& req, const Bases& base) {
  Views views(req, base, dev.device());
  assay_call call = views.call(req, dev.stream());
  const int n = req.timed_calls;
  // Mark 0: the batch's start, before any step; call i between marks 2i+1 and 2i+2.
  if (std::string why = dev.prepare_marks(2 * n + 1); !why.empty()) {
    reply(sock, -1, CallEnd::returned, why);
    return true;
  }
  int outputs[kMaxBuffers], num_outputs = 0;  // distinct output buffers, in tensor order
  for (int i = req.num_inputs; i < req.num_inputs + req.num_outputs; ++i) {
    const int b = req.tensors[i].buffer;
    bool seen = false;
    for (int k = 0; k < num_outputs; ++k) seen |= outputs[k] == b;
    if (!seen) outputs[num_outputs++] = b;
  }
  auto* capture = static_cast<unsigned char*>(base[req.capture_buffer]);
  int code = 0, made = 0;
  dev.mark(0);
  for (int i = 0; i < n && code == 0; ++i, ++made) {
    const int set = i % req.num_sets;
    for (int c = req.set_begin[set]; c < req.set_begin[set + 1]; ++c)
      dev.queue_copy(base[req.copies[c].dst], base[req.copies[c].src], req.copies[c].bytes);
    if (req.flush_bytes > 0)
      if (std::string why = dev.queue_flush(req.flush_bytes, unsigned(i)); !why.empty()) {
        reply(sock, -1, CallEnd::returned, why);
        const Timings none;
        if (!send_message(sock, &none, sizeof none, nullptr, 0)) std::_Exit(2);
        return true;
      }
    dev.mark(2 * i + 1);
    if (!req.no_call) code = run(&call);
    dev.mark(2 * i + 2);
    uint64_t at = uint64_t(i) * req.capture_stride;
    for (int k = 0; k < num_outputs; ++k) {
      dev.queue_copy(capture + at, base[outputs[k]], req.buffer_bytes[outputs[k]]);
      at += req.buffer_bytes[outputs[k]];
    }
  }
  bool lost = false;
  const std::string error = dev.finish_batch(lost);
  Timings t;
  t.calls = made;
  if (error.empty() && made > 0) {
    t.span_s = dev.seconds_between(0, 2 * made);
    for (int i = 0; i < made; ++i) t.call_s[i] = dev.seconds_between(2 * i + 1, 2 * i + 2);
  }
  const CallEnd end = lost ? CallEnd::fatal : error.empty() ? CallEnd::returned : CallEnd::device_error;
  reply(sock, code, end, error.empty() ? "" : error + (lost ? " (sticky: the worker's CUDA context is lost)" : ""));
  if (!send_message(sock, &t, sizeof t, nullptr, 0)) std::_Exit(2);
  return !lost;
}

// Serves one call; returns false when the worker must leave (context lost).
bool serve(int sock, assay_run_fn run, WorkerDevice& dev, const CallRequest& req, const int* fds, int nfds) {
  Bases base = {};
  const bool batch = req.kind == RequestKind::timed;
  std::string why = well_formed(req) && (!batch || well_formed_batch(req)) ? dev.map(req, fds, nfds, base)
                                                                           : "worker: malformed call request";
  bool stay = true;
  if (!why.empty()) {
    reply(sock, -1, CallEnd::returned, why);
    const Timings none;
    if (batch && !send_message(sock, &none, sizeof none, nullptr, 0)) std::_Exit(2);
  } else if (batch) {
    stay = serve_batch(sock, run, dev, req, base);
  } else {
    Views views(req, base, dev.device());
    assay_call call = views.call(req, dev.stream());
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
