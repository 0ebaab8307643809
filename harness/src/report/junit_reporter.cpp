// JUnit XML in the shape GitHub, GitLab and Jenkins read: one <testcase> per
// kernel, a <failure> carrying the verdict, details and repro line.
#include <fstream>

#include <fmt/format.h>

#include "core/build_info.h"
#include "core/error.h"
#include "report/reporter.h"

namespace assay {

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

namespace {

class JunitReporter final : public Reporter {
 public:
  JunitReporter(std::filesystem::path file, bool expect_mode) : file_(std::move(file)), expect_mode_(expect_mode) {}
  void run_done(const std::vector<KernelReport>& ks) override {
    int failures = 0, errors = 0;
    double seconds = 0;
    std::string body;
    for (auto& k : ks) {
      seconds += k.seconds;
      body += fmt::format("    <testcase classname=\"assay.{}\" name=\"{}\" time=\"{:.3f}\">\n", xml_escape(k.backend),
                          xml_escape(k.name), k.seconds);
      if (!k.setup_error.empty() || k.infrastructure_failed()) {
        ++errors;
        std::string text = k.setup_error;
        for (auto& e : k.infrastructure) text += fmt::format("{}: {}\n", describe(e.c), e.message);
        body += fmt::format("      <error message=\"{}\">{}</error>\n", xml_escape(k.verdict()), xml_escape(text));
      } else if (expect_mode_ ? !k.expect_met() : k.verdict() != "pass") {
        ++failures;
        std::string text = fmt::format("verdict {} (expected {}) after {} cases\n", k.verdict(),
                                       k.expect.empty() ? "pass" : k.expect, k.cases_run);
        for (auto& f : k.failures)
          text += fmt::format("{}: {}\n{}\nrepro: {}\n", name(f.outcome.verdict), describe(f.c), f.outcome.detail,
                              f.repro);
        for (auto& c : k.sanitizer)
          if (c.errors != 0 || c.timed_out)
            text += fmt::format("{} on {}: {} errors{}; report {}\n", k.sanitizer_tool, c.case_file.string(), c.errors,
                                c.timed_out ? " (timed out)" : "", c.report.string());
        body += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(k.verdict()),
                            xml_escape(k.verdict()), xml_escape(text));
      }
      body += fmt::format("      <system-out>{} cases run, {} passed, {} skipped</system-out>\n", k.cases_run,
                          k.cases_passed, k.cases_skipped);
      body += "    </testcase>\n";
    }
    std::ofstream out(file_);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << fmt::format("<testsuites tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n", ks.size(),
                       failures, errors, seconds)
        << fmt::format("  <testsuite name=\"assay\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                       ks.size(), failures, errors, seconds)
        << fmt::format("    <properties>\n      <property name=\"assay.build\" value=\"{}\"/>\n"
                       "      <property name=\"assay.commit\" value=\"{}\"/>\n    </properties>\n",
                       xml_escape(build_line()), xml_escape(build_commit()))
        << body << "  </testsuite>\n</testsuites>\n";
    if (!out) throw InfraError("cannot write " + file_.string());
  }

 private:
  std::filesystem::path file_;
  bool expect_mode_;  // a kernel fails when its verdict differs from `expect` (else: from pass)
};

}  // namespace

std::unique_ptr<Reporter> make_junit_reporter(std::filesystem::path file, bool expect_mode) {
  return std::make_unique<JunitReporter>(std::move(file), expect_mode);
}

}  // namespace assay
