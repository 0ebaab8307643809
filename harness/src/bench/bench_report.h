// The reports of assay bench: JSON (the schema docs/bench.md lists, read by
// the HTML report too), Markdown and JUnit (one test case per shape).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench.h"

namespace assay::bench {

nlohmann::json to_json(const BenchReport& r);
std::string to_markdown(const BenchReport& r);
std::string to_junit(const BenchReport& r);

}  // namespace assay::bench
