// A timeline of what a process asks of the GPU, for finding where the
// harness's time goes on a machine without Nsight: kernels, copies, memsets,
// synchronizations and runtime calls, one CSV line each, written by CUPTI's
// activity API. Loaded by the CUDA driver into every process that has
//   CUDA_INJECTION64_PATH=.../libassay_cupti_trace.so  ASSAY_TRACE_DIR=DIR
// in its environment (workers too), each writing DIR/trace.<pid>.csv:
//   kind,name,start_ns,end_ns,bytes_or_stream
// bench/trace/summarize.py turns the files into a table. Not part of the
// build: scripts/build-cupti-trace.sh DIR compiles it.
#include <cupti.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

FILE* out = nullptr;
std::mutex out_mutex;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void write_line(const char* kind, const char* name, uint64_t start, uint64_t end, uint64_t extra) {
  std::fprintf(out, "%s,%s,%llu,%llu,%llu\n", kind, name, (unsigned long long)start, (unsigned long long)end,
               (unsigned long long)extra);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(out_mutex);
  CUpti_Activity* record = nullptr;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
        std::string name = k->name ? k->name : "?";
        for (char& c : name)
          if (c == ',') c = ';';
        write_line("kernel", name.c_str(), k->start, k->end, k->streamId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
        const char* kinds[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
        write_line("memcpy", m->copyKind < 11 ? kinds[m->copyKind] : "other", m->start, m->end, m->bytes);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
        write_line("memset", "memset", m->start, m->end, m->bytes);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        auto* a = reinterpret_cast<CUpti_ActivityAPI*>(record);
        const char* name = nullptr;
        cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
        write_line("runtime", name ? name : "?", a->start, a->end, a->threadId);
        break;
      }
      default:
        break;
    }
  }
  free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(out_mutex);
  if (out) std::fclose(out), out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection() {
  const char* dir = std::getenv("ASSAY_TRACE_DIR");
  std::string path = std::string(dir ? dir : ".") + "/trace." + std::to_string(getpid()) + ".csv";
  out = std::fopen(path.c_str(), "w");
  if (!out) return 0;
  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityFlushPeriod(200);  // ms: a worker that is killed loses at most this much
  std::atexit(finish);
  return 1;
}
