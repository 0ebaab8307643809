// The messages between the harness and its worker process, sent over a
// SOCK_SEQPACKET socket pair: fixed-size plain structs (one message each),
// with the buffers' memfds passed alongside as SCM_RIGHTS.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace assay::wire {

inline constexpr int kMaxTensors = 8, kMaxScalars = 16, kMaxDims = 6;
// A call's buffers: its tensors' and those its copies name (captures, the
// next call's inputs).
inline constexpr int kMaxBuffers = 32, kMaxCopies = 64;  // a timed batch copies each set's every tensor
inline constexpr int kMaxForget = 64;
// A timed batch (assay bench): at most this many calls, over at most this many input sets.
inline constexpr int kMaxTimed = 256, kMaxSets = 8;  // sets: assay bench's rotating ones and its fresh probes

struct Tensor {
  int32_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  uint8_t has_strides = 0, code = 0, bits = 0;
  uint16_t lanes = 1;
  uint64_t byte_offset = 0;
  int32_t buffer = 0;        // index into CallRequest::buffer_bytes / the passed fds
  uint64_t data_offset = 0;  // DLTensor.data minus the buffer's start
};

// The first `bytes` of one buffer copied onto another, in the worker.
struct Copy {
  int32_t dst = 0, src = 0;  // buffer indices
  uint64_t bytes = 0;
};

// A request is a call, or (kind forget) no call: the worker closes its
// mappings of the buffers forget_ids names and answers, so that the harness
// may free them (CUDA forbids freeing a buffer another process has open)
// without stopping the worker and losing what the candidate keeps in it.
// A request of kind timed is a batch of calls for assay bench (below).
enum class RequestKind : int32_t { call = 0, forget = 1, timed = 2 };

struct CallRequest {
  RequestKind kind = RequestKind::call;
  int32_t num_forget = 0;
  uint64_t forget_ids[kMaxForget] = {};
  char op[16] = {};
  int32_t num_inputs = 0, num_outputs = 0, num_scalars = 0, num_buffers = 0;
  double scalars[kMaxScalars] = {};
  Tensor tensors[kMaxTensors];  // inputs, then outputs
  uint64_t buffer_bytes[kMaxBuffers] = {};
  // cuda: buffers travel as CUDA IPC handles, keyed by the allocation's id
  // (the worker maps each id once and keeps it); host: as the passed fds.
  uint64_t buffer_ids[kMaxBuffers] = {};
  unsigned char ipc_handles[kMaxBuffers][64] = {};
  // Done in order once the call's work has finished and been checked, unless
  // the call cost the worker its context: what the call left, copied where
  // the harness reads it, then the next call's inputs put in place. A case's
  // calls thus follow each other in the worker with no turn of the harness's
  // on the GPU between them (exec/executor.h).
  int32_t num_copies = 0;
  Copy copies[kMaxCopies];

  // Kind timed: `timed_calls` calls back to back, on the device in stream
  // order. Before call i: set i % num_sets's copies (copies[set_begin[s]]
  // up to copies[set_begin[s + 1]]: its inputs and the outputs' initial
  // bytes into the live buffers), then for cold runs flush_bytes of the
  // worker's own memory overwritten (0: none; its own, so that no mapping or
  // page fault is timed); then the call between two timestamps; right after the
  // second, each distinct output buffer (in tensor order) copied into the
  // capture buffer at i * capture_stride plus the bytes of the ones before.
  // no_call: the same steps without the call (what the harness's own steps cost).
  int32_t timed_calls = 0, num_sets = 0, set_begin[kMaxSets + 1] = {};
  int32_t capture_buffer = -1, no_call = 0;
  uint64_t capture_stride = 0, flush_bytes = 0;
};

// After a timed batch's Reply: the worker's timestamps, seconds. call_s[i]
// is call i's, span_s from the batch's start (before the first call's
// steps) to the last call's end: every step of the batch is inside it.
struct Timings {
  int32_t calls = 0;  // made (fewer when one failed)
  double span_s = 0;
  double call_s[kMaxTimed] = {};
};

// How a call ended, as the worker saw it.
enum class CallEnd : int32_t {
  returned = 0,
  device_error = 1,      // a CUDA error the context survives (e.g. a bad launch)
  fatal = 2,             // a sticky CUDA error or a broken limit: the worker leaves after replying
  unordered_output = 3,  // an output changed after the call's stream had finished
  // The call failed (or its checks could not be set up) while the device's
  // memory was full: the machine's fault on a shared GPU, no verdict; the
  // harness waits and runs the case again (exec/oom_retry.h).
  out_of_memory = 4,
};

// The worker's first message has code 0 when it is ready, one of these when it
// could not set up the device (the machine's fault: out of memory is
// transient on a shared GPU, worth waiting for), -1 when it could not load
// the kernel (the kernel's).
inline constexpr int32_t kDeviceUnavailable = -2;
inline constexpr int32_t kDeviceOutOfMemory = -3;

struct Reply {  // also the worker's first message: ready (code 0) or why not
  int32_t code = 0;  // assay_run's return value
  CallEnd end = CallEnd::returned;
  // Where the worker's time went (seconds): inside assay_run, waiting for the
  // call's work, checking its outputs' order. For the harness's profile.
  float run_s = 0, wait_s = 0, check_s = 0;
  char message[1024] = {};
};

// Both return false on any failure (peer gone, short message).
bool send_message(int sock, const void* data, size_t len, const int* fds, int nfds);
// Receives one message of exactly `len` bytes and up to max_fds descriptors.
bool recv_message(int sock, void* data, size_t len, int* fds, int max_fds, int* nfds);

}  // namespace assay::wire
