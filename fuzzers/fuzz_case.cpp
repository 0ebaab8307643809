// libFuzzer target: assay::parse_case_yaml on arbitrary text (issue #3).
// Bad input may only throw assay::InputError; any other exception, a crash,
// a sanitizer report, a leak, a hang or running out of memory is a finding.
//
// A case that loads must also survive the documented round trip: to_yaml()
// then parse_case_yaml() gives back the same Case, bit for bit; then the
// layout check that runs before a case file's case (check_layouts).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "case/case.h"
#include "core/error.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_case: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void round_trip(const assay::Case& c) {
  std::string again = assay::to_yaml(c);
  assay::LoadedCase back;
  try {
    back = assay::parse_case_yaml(again, "round-trip.yaml");
  } catch (const assay::InputError& e) {
    finding("to_yaml() wrote a case file that does not load back", std::string(e.what()) + "\n--- text ---\n" + again);
  }
  if (!(back.c == c))
    finding("to_yaml() then parse_case_yaml() changed the case",
            "before: " + assay::describe(c) + " origin=" + c.origin + "\nafter:  " + assay::describe(back.c) +
                " origin=" + back.c.origin + "\n--- text ---\n" + again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    assay::LoadedCase loaded = assay::parse_case_yaml(text, "fuzz_case.yaml", "cases");
    (void)assay::describe(loaded.c);
    round_trip(loaded.c);
    assay::check_layouts(loaded.c);  // any strides a file can hold: refused by InputError, never UB
  } catch (const assay::InputError&) {
    // the expected outcome for bad input
  } catch (const std::exception& e) {
    finding("unexpected exception escaped parse_case_yaml", e.what());
  } catch (...) {
    finding("unexpected non-std exception escaped parse_case_yaml", "");
  }
  return 0;
}
