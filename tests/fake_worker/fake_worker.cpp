// A stand-in for assay-worker that speaks its protocol but runs nothing, for
// the harness's side of a device whose memory is full (no GPU needed):
// ASSAY_FAKE_WORKER=setup_oom        set-up fails: the device's memory is full
// ASSAY_FAKE_WORKER=setup_unavailable set-up fails otherwise
// ASSAY_FAKE_WORKER=call_oom         ready; every call: the memory was full
// anything else                      ready; every call returns 0
// (every mode that gets ready answers forget requests)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "exec/worker_protocol.h"

using namespace assay::wire;

static void reply(int sock, int code, CallEnd end, const char* message) {
  Reply r;
  r.code = code, r.end = end;
  std::snprintf(r.message, sizeof r.message, "%s", message);
  if (!send_message(sock, &r, sizeof r, nullptr, 0)) std::_Exit(2);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int sock = std::atoi(argv[1]);
  const std::string mode = std::getenv("ASSAY_FAKE_WORKER") ? std::getenv("ASSAY_FAKE_WORKER") : "";
  if (mode == "setup_oom") {
    reply(sock, kDeviceOutOfMemory, CallEnd::returned,
          "worker: CUDA setup failed: cudaErrorMemoryAllocation: out of memory");
    return 0;
  }
  if (mode == "setup_unavailable") {
    reply(sock, kDeviceUnavailable, CallEnd::returned, "worker: CUDA setup failed: cudaErrorNoDevice: no device");
    return 0;
  }
  reply(sock, 0, CallEnd::returned, "ready");
  for (;;) {
    CallRequest req;
    int fds[kMaxBuffers], nfds = 0;
    if (!recv_message(sock, &req, sizeof req, fds, kMaxBuffers, &nfds)) return 0;
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    if (req.kind == RequestKind::forget)
      reply(sock, 0, CallEnd::returned, "");
    else if (mode == "call_oom")
      reply(sock, 2, CallEnd::out_of_memory, "the device's memory was full during the call: cudaErrorMemoryAllocation");
    else
      reply(sock, 0, CallEnd::returned, "");
  }
}
