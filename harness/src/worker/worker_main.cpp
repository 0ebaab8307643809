// assay-worker: the process that runs an untrusted candidate. It owns nothing
// the verdict depends on: it maps the case's buffers (shared with the harness),
// calls assay_run, and reports the return code. If the candidate crashes, hangs
// or scribbles over memory, only this process suffers; the harness starts a
// fresh one.
//
//   assay-worker SOCKET_FD LIBRARY ENTRY
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "assay/abi.h"
#include "exec/worker_protocol.h"

namespace {

using namespace assay::wire;

void reply(int sock, int code, const std::string& message) {
  Reply r;
  r.code = code;
  std::snprintf(r.message, sizeof r.message, "%s", message.c_str());
  if (!send_message(sock, &r, sizeof r, nullptr, 0)) std::_Exit(2);
}

// Serves one call: map the buffers, build the DLTensors, call, unmap.
void serve(int sock, assay_run_fn run, const CallRequest& req, const int* fds, int nfds) {
  void* maps[kMaxTensors] = {};
  bool ok = req.num_buffers == nfds && req.num_buffers <= kMaxTensors &&
            req.num_inputs + req.num_outputs <= kMaxTensors && req.num_scalars <= kMaxScalars;
  for (int i = 0; ok && i < nfds; ++i) {
    maps[i] = mmap(nullptr, req.buffer_bytes[i], PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
    ok = maps[i] != MAP_FAILED;
    if (!ok) maps[i] = nullptr;
  }
  DLTensor tensors[kMaxTensors] = {};
  int64_t shapes[kMaxTensors][kMaxDims], strides[kMaxTensors][kMaxDims];
  const int count = req.num_inputs + req.num_outputs;
  for (int i = 0; ok && i < count; ++i) {
    const Tensor& t = req.tensors[i];
    ok = t.buffer >= 0 && t.buffer < nfds && t.ndim >= 0 && t.ndim <= kMaxDims &&
         t.data_offset < req.buffer_bytes[t.buffer];
    if (!ok) break;
    std::memcpy(shapes[i], t.shape, sizeof t.shape);
    std::memcpy(strides[i], t.strides, sizeof t.strides);
    tensors[i] = DLTensor{static_cast<char*>(maps[t.buffer]) + t.data_offset, DLDevice{kDLCPU, 0}, t.ndim,
                          DLDataType{t.code, t.bits, t.lanes}, shapes[i], t.has_strides ? strides[i] : nullptr,
                          t.byte_offset};
  }
  if (!ok) {
    reply(sock, -1, "worker: malformed call request");
  } else {
    char op[sizeof req.op + 1] = {};
    std::memcpy(op, req.op, sizeof req.op);
    assay_call call{ASSAY_ABI_VERSION, op, req.num_inputs, tensors, req.num_outputs, tensors + req.num_inputs,
                    req.num_scalars, req.scalars, nullptr, nullptr, 0};
    int code = run(&call);
    reply(sock, code, "");
  }
  for (int i = 0; i < nfds; ++i) {
    if (maps[i]) munmap(maps[i], req.buffer_bytes[i]);
    close(fds[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: assay-worker SOCKET_FD LIBRARY ENTRY (started by assay, not by hand)\n");
    return 2;
  }
  const int sock = std::atoi(argv[1]);
  void* handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    reply(sock, -1, std::string("cannot load ") + argv[2] + ": " + dlerror());
    return 0;
  }
  auto run = reinterpret_cast<assay_run_fn>(dlsym(handle, argv[3]));
  if (!run) {
    reply(sock, -1, std::string("entry '") + argv[3] + "' not found in " + argv[2]);
    return 0;
  }
  reply(sock, 0, "ready");
  for (;;) {
    CallRequest req;
    int fds[kMaxTensors], nfds = 0;
    if (!recv_message(sock, &req, sizeof req, fds, kMaxTensors, &nfds)) return 0;  // harness gone or done
    serve(sock, run, req, fds, nfds);
  }
}
