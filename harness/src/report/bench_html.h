// The HTML report of `assay bench` (issue #16, docs/bench.md): one bench
// report's JSON as a single self-contained page (inline CSS, plots as inline
// SVG drawn here; nothing is fetched), so it can be mailed or archived as
// one file. Any field may be missing or null: it renders as "—".
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace assay {

std::string bench_html(const nlohmann::json& report);

}  // namespace assay
