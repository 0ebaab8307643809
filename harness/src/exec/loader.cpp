#include "exec/loader.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace assay {
namespace fs = std::filesystem;
namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Runs a shell command, returns (exit status, combined output).
std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "cannot start: " + cmd};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string nvcc_path() {
  if (const char* e = std::getenv("ASSAY_NVCC")) return e;
#ifdef ASSAY_NVCC
  if (fs::exists(ASSAY_NVCC)) return ASSAY_NVCC;
#endif
  return "nvcc";
}

std::string host_cxx() {
  if (const char* e = std::getenv("CXX")) return e;
  return "c++";
}

fs::path cache_root(const LoaderOptions& opt) {
  if (!opt.cache_dir.empty()) return opt.cache_dir;
  if (const char* e = std::getenv("ASSAY_CACHE_DIR")) return e;
  if (const char* home = std::getenv("HOME")) return fs::path(home) / ".cache" / "assay";
  return fs::temp_directory_path() / "assay-cache";
}

}  // namespace

fs::path kernel_include_dir() {
  if (const char* e = std::getenv("ASSAY_INCLUDE_DIR")) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (fs::path dir : {exe / "include", exe.parent_path() / "include"})
    if (fs::exists(dir / "assay" / "abi.h")) return dir;
  throw InfraError("cannot find the kernel headers (assay/abi.h) next to the assay binary; set ASSAY_INCLUDE_DIR");
}

LoadedKernel load_kernel(const Spec& spec, const LoaderOptions& opt) {
  const bool cuda = spec.backend == BackendKind::cuda;
  const fs::path include = kernel_include_dir();
  std::string compiler = cuda ? nvcc_path() : host_cxx();
  // -cudart shared: the candidate uses the runtime the harness (or worker)
  // loaded, not a private static copy, so its launch errors reach their
  // cudaGetLastError instead of staying in the candidate's own runtime.
  std::string flags = cuda ? fmt::format("-std=c++17 -O2 -shared -Xcompiler -fPIC -cudart shared -arch={} -lineinfo",
                                         opt.cuda_arch)
                           : "-std=c++17 -O2 -shared -fPIC -g";
  for (auto& f : spec.flags) flags += " " + quote(f);
  std::string libs;
  for (auto& l : spec.libs) libs += " -l" + l;

  // The key covers everything that changes the binary.
  auto [vstatus, version] = run_command(compiler + " --version");
  if (vstatus != 0) throw InfraError(fmt::format("compiler '{}' is not usable:\n{}", compiler, version));
  uint64_t key = fnv1a(read_file(spec.source));
  // Named, not a temporary inside the list below: a range-for's temporaries
  // die before its body runs, and the key would hash freed memory.
  const std::string abi = read_file(include / "assay" / "abi.h");
  for (std::string_view part : {std::string_view(compiler), std::string_view(flags), std::string_view(libs),
                                std::string_view(version), std::string_view(abi)})
    key = fnv1a(part, key);
  const fs::path dir = cache_root(opt);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InfraError(fmt::format("cannot create cache folder {}: {}", dir.string(), ec.message()));
  const fs::path lib = dir / fmt::format("{}-{:016x}.so", spec.name, key);

  LoadedKernel k;
  k.library = lib;
  k.from_cache = fs::exists(lib);
  if (!k.from_cache) {
    // Build under a private name and rename: concurrent runs never see half a file.
    fs::path tmp = dir / fmt::format(".{}-{:016x}.{}.so", spec.name, key, getpid());
    std::string cmd = fmt::format("{} {} -I{} {} -o {}{}", quote(compiler), flags, quote(include.string()),
                                  quote(spec.source.string()), quote(tmp.string()), libs);
    auto [status, output] = run_command(cmd);
    if (status != 0) {
      fs::remove(tmp, ec);
      throw InputError(fmt::format("{}: compiling {} failed:\n{}\n{}", spec.file.string(), spec.source.string(),
                                   cmd, output));
    }
    fs::rename(tmp, lib, ec);
    if (ec) throw InfraError(fmt::format("cannot move {} into the cache: {}", tmp.string(), ec.message()));
  }
  if (!opt.open) return k;  // untrusted code is loaded by the worker, never here
  k.handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!k.handle) throw InputError(fmt::format("{}: cannot load {}: {}", spec.file.string(), lib.string(), dlerror()));
  k.run = reinterpret_cast<assay_run_fn>(dlsym(k.handle, spec.entry.c_str()));
  if (!k.run)
    throw InputError(fmt::format("{}: entry '{}' not found in {} (is it extern \"C\"?)", spec.file.string(), spec.entry,
                                 spec.source.string()));
  return k;
}

}  // namespace assay
