// The bench report as one HTML page (bench_html.h). The JSON is read once
// into structs of optional fields, so a missing, null or mistyped field is
// handled in the readers and the drawing code never looks at the JSON. The
// plots are SVG drawn here: no script library, nothing fetched, and a CSP
// that forbids fetching anyway. The page's one inline script only measures
// the drawn marks (data-drawn), so a headless browser can prove the plots
// rendered (tests/test_bench_html.cpp).
#include "report/bench_html.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace assay {
namespace {

using nlohmann::json;
using Number = std::optional<double>;
using Text = std::optional<std::string>;

constexpr std::string_view missing = "—";

// ---- Reading the report: nothing here throws on a report of the wrong shape.

// The member `key` of `j`; nullptr when `j` is no object or the member is absent or null.
const json* member(const json* j, std::string_view key) {
  if (!j || !j->is_object()) return nullptr;
  auto it = j->find(std::string(key));
  if (it == j->end() || it->is_null()) return nullptr;
  return &*it;
}

const json* member(const json* j, std::initializer_list<std::string_view> path) {
  for (std::string_view key : path) j = member(j, key);
  return j;
}

// Finite numbers only: a NaN put into a json in C++ must not reach an axis.
Number number(const json* j) {
  if (!j || !j->is_number()) return {};
  const double v = j->get<double>();
  return std::isfinite(v) ? Number(v) : Number();
}

// Times, rates, work and speedups: a zero or negative one is no measurement
// (and has no place on a log axis), so it shows as missing.
Number positive(const json* j) {
  Number v = number(j);
  return v && *v > 0 ? v : Number();
}

// A string as it is; anything else (a number, an object) as its JSON text.
Text text(const json* j) {
  if (!j) return {};
  if (j->is_string()) return j->get<std::string>();
  return j->dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<bool> boolean(const json* j) {
  if (!j || !j->is_boolean()) return {};
  return j->get<bool>();
}

struct Timing {  // one side's cold or hot runs on one shape
  Number median, q1, q3, samples, noise, discarded, clock_mhz;
  Text stop;
};

struct Side {  // the candidate or the baseline on one shape
  Text verdict, detail;
  Timing cold, hot;
  Number flops_per_s, bytes_per_s;
};

struct Shape {
  int index = 0;  // from 1: what the plots' labels and the tables' captions call it
  std::string name;
  Text verdict, detail;
  Number flops, bytes, floor_seconds, speedup, speedup_low, speedup_high;
  Side candidate, baseline;
  // Only FASTER, SLOWER and SAME compare two timings; any other verdict
  // (timing_escape, impossible_speed, mismatch, or none) is a failure.
  bool failed() const { return !verdict || (*verdict != "FASTER" && *verdict != "SLOWER" && *verdict != "SAME"); }
};

Timing read_timing(const json* j) {
  return {positive(member(j, "median")), positive(member(j, "q1")),      positive(member(j, "q3")),
          number(member(j, "samples")),  number(member(j, "noise")),     number(member(j, "discarded")),
          number(member(j, "clock_mhz")), text(member(j, "stop"))};
}

Side read_side(const json* j) {
  return {text(member(j, "verdict")),         text(member(j, "detail")),
          read_timing(member(j, "cold")),     read_timing(member(j, "hot")),
          positive(member(j, "flops_per_s")), positive(member(j, "bytes_per_s"))};
}

// The shape's own name, else its sizes ("m=4096 n=4096"), else its number.
std::string shape_name(const json* j, int index) {
  if (Text s = text(member(j, "shape"))) return *s;
  if (const json* sizes = member(j, "sizes"); sizes && sizes->is_object() && !sizes->empty()) {
    std::string out;
    for (auto it = sizes->begin(); it != sizes->end(); ++it)
      out += (out.empty() ? "" : " ") + it.key() + "=" + text(&*it).value_or(std::string(missing));
    return out;
  }
  return fmt::format("shape {}", index);
}

std::vector<Shape> read_shapes(const json& report) {
  std::vector<Shape> shapes;
  const json* list = member(&report, "shapes");
  if (!list || !list->is_array()) return shapes;
  for (const json& j : *list) {
    Shape s;
    s.index = int(shapes.size()) + 1;
    s.name = shape_name(&j, s.index);
    s.verdict = text(member(&j, "verdict"));
    s.detail = text(member(&j, "detail"));
    s.flops = positive(member(&j, "flops"));
    s.bytes = positive(member(&j, "bytes"));
    s.floor_seconds = positive(member(&j, "floor_seconds"));
    s.speedup = positive(member(&j, "speedup"));
    s.speedup_low = positive(member(&j, "speedup_low"));
    s.speedup_high = positive(member(&j, "speedup_high"));
    s.candidate = read_side(member(&j, "candidate"));
    s.baseline = read_side(member(&j, "baseline"));
    shapes.push_back(std::move(s));
  }
  return shapes;
}

// ---- Text

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' ? ' ' : c;
    }
  }
  return out;
}

std::string esc_or_missing(const Text& t) { return t ? esc(*t) : std::string(missing); }

// At most `limit` characters (code points, not bytes), ending in "…" when
// cut: names inside a plot, where a long one would run over the others.
std::string shorten(const std::string& s, size_t limit) {
  auto starts_code_point = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  size_t code_points = 0, keep = s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (starts_code_point(s[i]) && code_points++ == limit - 1) keep = i;
  return code_points <= limit ? s : s.substr(0, keep) + "…";
}

// `v` with an SI prefix: "69.0 µs", "1.98 PFLOP/s"; `compact` drops
// trailing zeros ("10 µs"), for tick labels.
std::string si(double v, std::string_view unit, bool compact = false, int max_power = 18) {
  static constexpr std::string_view prefixes[] = {"p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E"};
  constexpr int min_power = -12;
  if (v == 0) return fmt::format("0 {}", unit);
  int power = std::clamp(int(std::floor(std::log10(std::abs(v)) / 3)) * 3, min_power, max_power);
  double m = v / std::pow(10.0, power);
  if (std::abs(m) >= 999.5 && power < max_power) {  // would print as "1000": the next prefix
    power += 3;
    m /= 1000;
  }
  const std::string_view prefix = prefixes[(power - min_power) / 3];
  if (compact || std::abs(m) < 1 || std::abs(m) >= 1000)  // also: past the prefixes' range
    return fmt::format("{:.3g} {}{}", m, prefix, unit);
  // Three significant digits of the rounded value: 99.99999 prints as "100", not "100.0".
  const int decimals = std::abs(m) >= 99.95 ? 0 : std::abs(m) >= 9.995 ? 1 : 2;
  return fmt::format("{:.{}f} {}{}", m, decimals, prefix, unit);
}

std::string seconds(double v) { return si(v, "s", false, 0); }  // no "ks": a long time stays in seconds
std::string seconds_or_missing(Number v) { return v ? seconds(*v) : std::string(missing); }

std::string ratio(double v) { return v >= 0.1 ? fmt::format("{:.2f}×", v) : fmt::format("{:.2g}×", v); }
std::string ratio_or_missing(Number v) { return v ? ratio(*v) : std::string(missing); }

std::string count_or_missing(Number v) { return v ? fmt::format("{:.0f}", *v) : std::string(missing); }

// A verdict's CSS class: its colour in the tables and the speedup plot.
std::string verdict_class(const Text& verdict) {
  if (verdict == "FASTER") return "faster";
  if (verdict == "SLOWER") return "slower";
  if (verdict == "SAME") return "same";
  return "failure";
}

// ---- Plots

// A logarithmic axis: values in [lo, hi] onto pixels [from, to] (for y,
// `to` is above `from`: SVG's y grows downwards).
struct LogAxis {
  double lo = 1, hi = 10, from = 0, to = 1;
  double at(double v) const {
    return from + (to - from) * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
  bool contains(double v) const { return v >= lo && v <= hi; }
  // The sparsest tick set that gives at least four ticks: each decade, then
  // 1-2-5, then finer; over many decades every k-th decade.
  std::vector<double> ticks() const {
    static const std::vector<std::vector<double>> per_decade = {
        {1}, {1, 2, 5}, {1, 1.5, 2, 3, 5, 7}, {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9}};
    const int first = int(std::floor(std::log10(lo))), last = int(std::ceil(std::log10(hi)));
    const int decade_step = std::max(1, (last - first) / 8);
    std::vector<double> t;
    for (size_t set = 0; set < per_decade.size(); ++set) {
      t.clear();
      for (int d = first; d <= last; d += set == 0 ? decade_step : 1)
        for (double m : per_decade[set])
          if (const double v = m * std::pow(10.0, d); contains(v)) t.push_back(v);
      if (t.size() >= 4) break;
    }
    return t;
  }
};

// The axis over the positive values, with room at both ends and at least
// 0.3 decades (one value alone, or values that barely differ); none when no value is positive.
std::optional<LogAxis> fit_log(const std::vector<double>& values, double from, double to) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (double v : values)
    if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (hi == 0) return {};
  double a = std::log10(lo), b = std::log10(hi);
  const double span = std::max(b - a, 0.3), middle = (a + b) / 2;
  a = std::min(a, middle - span / 2);
  b = std::max(b, middle + span / 2);
  const double room = (b - a) * 0.06;
  return LogAxis{std::pow(10.0, a - room), std::pow(10.0, b + room), from, to};
}

// One plot's canvas: the SVG's size and the plot area inside its margins
// (the legend sits in the top margin, the shapes' labels in the bottom one).
struct Frame {
  double width = 800, height = 430, left = 100, right = 20, top = 44, bottom = 136;
  double x0() const { return left; }
  double x1() const { return width - right; }
  double y0() const { return height - bottom; }  // the plot area's bottom edge (pixels grow downwards)
  double y1() const { return top; }
};

const std::string candidate_colour = "#1f6fb4", baseline_colour = "#e0701b";

std::string svg_open(std::string_view id, const Frame& f, std::string_view title) {
  return fmt::format(
      "<svg class=\"plot\" id=\"{0}\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" height=\"{2}\" role=\"img\" "
      "aria-labelledby=\"{0}-title\"><title id=\"{0}-title\">{3}</title>\n",
      id, f.width, f.height, esc(title));
}

std::string no_data(const Frame& f, std::string_view why) {
  return fmt::format(
      "<rect class=\"area\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
      "<text class=\"nodata\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
      f.x0(), f.y1(), f.x1() - f.x0(), f.y0() - f.y1(), (f.x0() + f.x1()) / 2, (f.y0() + f.y1()) / 2, esc(why));
}

using Label = std::function<std::string(double)>;

// The plot area's outline, horizontal grid lines at the ticks, their labels and the axis's title.
std::string y_axis(const LogAxis& y, const Frame& f, const Label& label, std::string_view title) {
  std::string out = fmt::format("<rect class=\"area\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", f.x0(),
                                f.y1(), f.x1() - f.x0(), f.y0() - f.y1());
  for (double t : y.ticks()) {
    const double py = y.at(t);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        f.x0(), f.x1(), py, py, f.x0() - 6, py + 4, esc(label(t)));
  }
  out += fmt::format(
      "<text class=\"axis\" transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      (f.y0() + f.y1()) / 2, esc(title));
  return out;
}

std::string x_axis(const LogAxis& x, const Frame& f, const Label& label, std::string_view title) {
  std::string out;
  for (double t : x.ticks()) {
    const double px = x.at(t);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"/>"
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        px, px, f.y1(), f.y0(), px, f.y0() + 16, esc(label(t)));
  }
  out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (f.x0() + f.x1()) / 2, f.y0() + 38, esc(title));
  return out;
}

// Shapes along x, one slot each: the slot's centre.
double slot_centre(const Frame& f, size_t i, size_t n) { return f.x0() + (f.x1() - f.x0()) * (double(i) + 0.5) / double(n); }
double slot_width(const Frame& f, size_t n) { return (f.x1() - f.x0()) / double(n); }

// "#1 m=4096 n=4096 k=4096" under each slot, slanted (at 45 degrees and 22
// characters the first one still fits the left margin); every k-th where
// slots are too narrow for all.
std::string shape_labels(const std::vector<Shape>& shapes, const Frame& f) {
  const size_t every = std::max<size_t>(1, size_t(std::ceil(14 / slot_width(f, shapes.size()))));
  std::string out;
  for (size_t i = 0; i < shapes.size(); i += every) {
    const std::string label = fmt::format("#{} {}", shapes[i].index, shapes[i].name);
    out += fmt::format(
        "<text class=\"tick\" transform=\"translate({:.1f},{}) rotate(-45)\" text-anchor=\"end\">"
        "<title>{}</title>{}</text>\n",
        slot_centre(f, i, shapes.size()), f.y0() + 14, esc(label), esc(shorten(label, 22)));
  }
  return out;
}

// The symbols marks are drawn with; in the legend too, where they are keys, not marks.
std::string circle(double x, double y, std::string_view cls, std::string_view colour, std::string_view title) {
  return fmt::format("<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\"><title>{}</title></circle>",
                     cls, x, y, colour, esc(title));
}
std::string square(double x, double y, std::string_view cls, std::string_view colour, std::string_view title) {
  return fmt::format(
      "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\"><title>{}</title></rect>", cls,
      x - 4, y - 4, colour, esc(title));
}

// A vertical interval with caps, [y(low), y(high)] at x.
std::string whisker(double x, double py_low, double py_high, std::string_view colour, std::string_view title) {
  return fmt::format(
      "<path class=\"mark whisker\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}h7M{3:.1f},{2:.1f}h7\" "
      "stroke=\"{4}\"><title>{5}</title></path>",
      x, py_low, py_high, x - 3.5, colour, esc(title));
}

// One row of keys in the top margin: each a symbol (drawn at the given centre) and its text.
struct Key {
  std::function<std::string(double, double)> symbol;
  std::string text;
};
std::string legend(const std::vector<Key>& keys, const Frame& f) {
  std::string out = "<g class=\"legend\">";
  double x = f.x0() + 6;
  const double y = f.y1() - 18;
  for (const Key& k : keys) {
    out += k.symbol(x, y);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", x + 10, y + 4, esc(k.text));
    x += 26 + 7.0 * double(k.text.size());  // about 7 px a character at 11 px
  }
  return out + "</g>\n";
}

struct Names {
  std::string candidate, baseline;
};

// Plot 1: each shape's cold median for both sides, whiskers over the IQR, and the floor time.
std::string time_plot(const std::vector<Shape>& shapes, const Names& names) {
  const Frame f;
  std::string out = svg_open("plot-time", f, "Cold median time per shape, with its interquartile range");
  std::vector<double> values;
  for (const Shape& s : shapes) {
    for (const Side* side : {&s.candidate, &s.baseline})
      for (Number v : {side->cold.q1, side->cold.median, side->cold.q3})
        if (v) values.push_back(*v);
    if (s.floor_seconds) values.push_back(*s.floor_seconds);
  }
  const std::optional<LogAxis> y = fit_log(values, f.y0(), f.y1());
  if (!y) return out + no_data(f, "no shape has a time") + "</svg>";
  out += y_axis(*y, f, [](double v) { return si(v, "s", true, 0); }, "cold time per call");
  out += shape_labels(shapes, f);
  const double offset = std::min(12.0, slot_width(f, shapes.size()) * 0.18);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const double x = slot_centre(f, i, shapes.size());
    if (s.floor_seconds)
      out += fmt::format(
          "<line class=\"mark floor\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"><title>#{} floor: {}</title></line>",
          x - 2 * offset, x + 2 * offset, y->at(*s.floor_seconds), y->at(*s.floor_seconds), s.index,
          esc(seconds(*s.floor_seconds)));
    bool any = false;
    for (const bool is_candidate : {true, false}) {
      const Side& side = is_candidate ? s.candidate : s.baseline;
      const Timing& t = side.cold;
      if (!t.median) continue;
      any = true;
      const double px = is_candidate ? x - offset : x + offset;
      const std::string& who = is_candidate ? names.candidate : names.baseline;
      const std::string& colour = is_candidate ? candidate_colour : baseline_colour;
      const std::string title =
          fmt::format("#{} {}: median {}, IQR {} – {}, {} samples", s.index, who, seconds(*t.median),
                      seconds_or_missing(t.q1), seconds_or_missing(t.q3), count_or_missing(t.samples));
      if (t.q1 && t.q3) out += whisker(px, y->at(*t.q1), y->at(*t.q3), colour, title);
      const double py = y->at(*t.median);
      out += is_candidate ? circle(px, py, "mark candidate", colour, title)
                          : square(px, py, "mark baseline", colour, title);
    }
    if (!any)
      out += fmt::format("<text class=\"gap\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no time</text>", x,
                         f.y0() - 8);
    out += "\n";
  }
  out += legend({{[&](double cx, double cy) { return circle(cx, cy, "key", candidate_colour, names.candidate); },
                  "candidate: " + shorten(names.candidate, 20)},
                 {[&](double cx, double cy) { return square(cx, cy, "key", baseline_colour, names.baseline); },
                  "baseline: " + shorten(names.baseline, 20)},
                 {[](double cx, double cy) {
                    return fmt::format("<line class=\"key floor\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>",
                                       cx - 6, cx + 6, cy, cy);
                  },
                  "floor (peaks' fastest)"}},
                f);
  return out + "</svg>";
}

// Plot 2: the speedup per shape as a bar from 1 with its interval; a failed shape is a labelled gap.
std::string speedup_plot(const std::vector<Shape>& shapes) {
  const Frame f;
  std::string out = svg_open("plot-speedup", f, "Speedup per shape (baseline median / candidate median)");
  std::vector<double> values = {1.0};  // the line at 1 is always in view
  for (const Shape& s : shapes)
    if (!s.failed())
      for (Number v : {s.speedup, s.speedup_low, s.speedup_high})
        if (v) values.push_back(*v);
  const LogAxis y = *fit_log(values, f.y0(), f.y1());
  out += y_axis(y, f, [](double v) { return fmt::format("{:.3g}×", v); }, "speedup (baseline / candidate)");
  out += shape_labels(shapes, f);
  const double one = y.at(1.0);
  out += fmt::format("<line class=\"one\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>\n", f.x0(), f.x1(), one, one);
  const double bar = std::min(28.0, slot_width(f, shapes.size()) * 0.5);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const double x = slot_centre(f, i, shapes.size());
    if (s.failed() || !s.speedup) {
      // No bar: a speedup of a failed shape would be a number without meaning.
      const std::string why = s.failed() ? esc_or_missing(s.verdict) : "no speedup";
      out += fmt::format(
          "<text class=\"gap\" transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">"
          "<title>#{} {}: {}</title>{}</text>\n",
          x + 4, (f.y0() + f.y1()) / 2, s.index, esc(s.name), esc_or_missing(s.detail), why);
      continue;
    }
    const double py = y.at(*s.speedup);
    const std::string title = fmt::format("#{} {}: {} [{}, {}] {}", s.index, s.name, ratio(*s.speedup),
                                          ratio_or_missing(s.speedup_low), ratio_or_missing(s.speedup_high),
                                          s.verdict.value_or(""));
    // At least a pixel high: a speedup of exactly 1 is still a drawn bar.
    out += fmt::format(
        "<rect class=\"mark bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}</title></rect>",
        verdict_class(s.verdict), x - bar / 2, std::min(py, one), bar, std::max(1.0, std::abs(py - one)), esc(title));
    if (s.speedup_low && s.speedup_high)
      out += whisker(x, y.at(*s.speedup_low), y.at(*s.speedup_high), "#333", title);
    if (shapes.size() <= 16)
      out += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"start\">{}</text>", x + bar / 2 + 3,
                         py + 4, esc(ratio(*s.speedup)));
    out += "\n";
  }
  auto swatch = [](std::string cls) {
    return [cls](double x, double y) {
      return fmt::format("<rect class=\"key bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\"/>", cls, x - 5,
                         y - 5);
    };
  };
  out += legend({{swatch("faster"), "FASTER"}, {swatch("slower"), "SLOWER"}, {swatch("same"), "SAME"},
                 {[](double cx, double cy) {
                    return fmt::format("<path class=\"key whisker\" d=\"M{0:.1f},{1:.1f}V{2:.1f}\" stroke=\"#333\"/>", cx,
                                       cy - 6, cy + 6);
                  },
                  "interval: baseline Q1/candidate Q3 to baseline Q3/candidate Q1"}},
                f);
  return out + "</svg>";
}

// Plot 3: achieved FLOP/s against arithmetic intensity, under the device's roofs.
std::string roofline_plot(const std::vector<Shape>& shapes, const json& report, const Names& names) {
  Frame f;
  f.bottom = 56;  // numbers, not slanted shape names, under this x axis
  f.height = 400;
  std::string out = svg_open("plot-roofline", f, "Roofline: achieved FLOP/s against arithmetic intensity");
  const Number peak_flops = positive(member(&report, {"device", "peaks", "flops_per_s"}));
  const Number peak_bytes = positive(member(&report, {"device", "peaks", "bytes_per_s"}));
  auto roof = [&](double intensity) {  // the fastest rate the peaks allow at this intensity
    double r = std::numeric_limits<double>::infinity();
    if (peak_flops) r = std::min(r, *peak_flops);
    if (peak_bytes) r = std::min(r, *peak_bytes * intensity);
    return r;
  };
  std::vector<double> xs, ys;
  for (const Shape& s : shapes)
    if (s.flops && s.bytes) {
      xs.push_back(*s.flops / *s.bytes);
      for (Number v : {s.candidate.flops_per_s, s.baseline.flops_per_s})
        if (v) ys.push_back(*v);
      if (peak_bytes && !peak_flops) ys.push_back(roof(xs.back()));
    }
  const Number ridge = peak_flops && peak_bytes ? Number(*peak_flops / *peak_bytes) : Number();
  if (ridge) xs.push_back(*ridge);
  if (peak_flops) ys.push_back(*peak_flops);
  const std::optional<LogAxis> x = fit_log(xs, f.x0(), f.x1());
  const std::optional<LogAxis> y = fit_log(ys, f.y0(), f.y1());
  if (!x || !y) return out + no_data(f, "no shape has its FLOPs, bytes and FLOP/s") + "</svg>";
  out += y_axis(*y, f, [](double v) { return si(v, "FLOP/s", true); }, "achieved FLOP/s");
  out += x_axis(*x, f, [](double v) { return fmt::format("{:.3g}", v); }, "arithmetic intensity (FLOP/byte)");
  // The roofs are straight in log-log, so a polyline through their corners is exact; the clip keeps them in the area.
  out += fmt::format("<clipPath id=\"plot-roofline-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
                     f.x0(), f.y1(), f.x1() - f.x0(), f.y0() - f.y1());
  if (peak_flops || peak_bytes) {
    std::vector<double> corners = {x->lo};
    if (ridge && x->contains(*ridge)) corners.push_back(*ridge);
    corners.push_back(x->hi);
    std::string d;
    for (double c : corners) d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : "L", x->at(c), y->at(roof(c)));
    out += fmt::format("<path class=\"roof\" clip-path=\"url(#plot-roofline-area)\" d=\"{}\"/>\n", d);
    if (peak_flops)
      out += fmt::format("<text class=\"roof-label\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">peak {}</text>\n",
                         f.x1() - 6, y->at(*peak_flops) - 6, esc(si(*peak_flops, "FLOP/s")));
  }
  for (const Shape& s : shapes) {
    if (!s.flops || !s.bytes) continue;
    const double intensity = *s.flops / *s.bytes, px = x->at(intensity);
    const Number* top = nullptr;  // where the shape's label goes: its highest point
    for (const bool is_candidate : {true, false}) {
      const Side& side = is_candidate ? s.candidate : s.baseline;
      if (!side.flops_per_s) continue;
      const std::string title = fmt::format("#{} {}, {}: {} at {:.3g} FLOP/byte", s.index, s.name,
                                            is_candidate ? names.candidate : names.baseline,
                                            si(*side.flops_per_s, "FLOP/s"), intensity);
      const double py = y->at(*side.flops_per_s);
      out += is_candidate ? circle(px, py, "mark candidate", candidate_colour, title)
                          : square(px, py, "mark baseline", baseline_colour, title);
      if (!top || *side.flops_per_s > **top) top = &side.flops_per_s;
    }
    if (top && shapes.size() <= 12)  // more labels would cover the points; each point's title names it
      out += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">#{}</text>", px + 7, y->at(**top) - 5, s.index);
    out += "\n";
  }
  std::string roof_text = "roof: ";
  roof_text += peak_flops ? si(*peak_flops, "FLOP/s") : std::string(missing);
  roof_text += ", ";
  roof_text += peak_bytes ? si(*peak_bytes, "B/s") : std::string(missing);
  out += legend({{[&](double cx, double cy) { return circle(cx, cy, "key", candidate_colour, names.candidate); },
                  "candidate: " + shorten(names.candidate, 20)},
                 {[&](double cx, double cy) { return square(cx, cy, "key", baseline_colour, names.baseline); },
                  "baseline: " + shorten(names.baseline, 20)},
                 {[](double cx, double cy) {
                    return fmt::format("<path class=\"key roof\" d=\"M{:.1f},{:.1f}l12,-8\"/>", cx - 6, cy + 4);
                  },
                  roof_text}},
                f);
  return out + "</svg>";
}

// ---- The page

std::string fact(std::string_view name, const std::string& value_html) {
  return fmt::format("<dt>{}</dt><dd>{}</dd>\n", name, value_html);
}

std::string header(const json& report, const Names& names) {
  const json* device = member(&report, "device");
  std::string clocks(missing);
  if (Number sm = number(member(device, "sm_clock_mhz"))) {
    clocks = fmt::format("SM {:.0f} MHz", *sm);
    if (Number max = number(member(device, "max_sm_clock_mhz"))) clocks += fmt::format(" (max {:.0f} MHz)", *max);
  } else if (Number max = number(member(device, "max_sm_clock_mhz"))) {
    clocks = fmt::format("max {:.0f} MHz", *max);
  }
  const Number peak_flops = positive(member(device, {"peaks", "flops_per_s"}));
  const Number peak_bytes = positive(member(device, {"peaks", "bytes_per_s"}));
  const std::string peaks =
      fmt::format("{}, {} (source: {})", peak_flops ? si(*peak_flops, "FLOP/s") : std::string(missing),
                  peak_bytes ? si(*peak_bytes, "B/s") : std::string(missing),
                  esc_or_missing(text(member(device, {"peaks", "source"}))));
  std::string out = fmt::format("<header>\n<h1>assay bench: <span class=\"candidate\">{}</span> vs <span class=\"baseline\">{}</span></h1>\n",
                                esc(names.candidate), esc(names.baseline));
  out += "<dl class=\"facts\">\n";
  out += fact("candidate", fmt::format("{} <span class=\"dim\">({})</span>", esc(names.candidate),
                                       esc_or_missing(text(member(&report, {"candidate", "spec"})))));
  out += fact("baseline", fmt::format("{} <span class=\"dim\">({})</span>", esc(names.baseline),
                                      esc_or_missing(text(member(&report, {"baseline", "spec"})))));
  out += fact("backend", esc_or_missing(text(member(&report, "backend"))));
  out += fact("device", esc_or_missing(text(member(device, "name"))));
  out += fact("clocks", clocks);
  out += fact("peaks", peaks);
  out += fact("date", esc_or_missing(text(member(&report, "date"))));
  out += fact("build", fmt::format("{} <span class=\"dim\">{}</span>",
                                   esc_or_missing(text(member(&report, {"build", "commit"}))),
                                   esc(text(member(&report, {"build", "line"})).value_or(""))));
  out += fact("inputs", esc_or_missing(text(member(&report, "inputs"))));
  out += fact("geometric-mean speedup", ratio_or_missing(positive(member(&report, "geomean_speedup"))));
  out += "</dl>\n";
  // The claim: only where a speedup was required.
  if (Number required = positive(member(&report, "require_speedup"))) {
    const std::optional<bool> holds = boolean(member(&report, "claim_holds"));
    out += fmt::format("<p class=\"claim {}\">Required speedup ≥ {}: {}</p>\n",
                       holds ? (*holds ? "holds" : "fails") : "unknown", ratio(*required),
                       holds ? (*holds ? "holds" : "does not hold") : std::string(missing));
  } else {
    out += "<p class=\"claim none\">No speedup was required.</p>\n";
  }
  return out + "</header>\n";
}

std::string side_cells(const Shape& s, const std::function<std::string(const Side&)>& cell) {
  return fmt::format("<td>{}</td><td>{}</td>", cell(s.candidate), cell(s.baseline));
}

std::string shape_table(const Shape& s, const Names& names) {
  auto row = [](std::string_view name, const std::string& html) {
    return fmt::format("<tr><th>{}</th><td colspan=\"2\">{}</td></tr>\n", name, html);
  };
  auto sides = [&](std::string_view name, const std::function<std::string(const Side&)>& cell) {
    return fmt::format("<tr><th>{}</th>{}</tr>\n", name, side_cells(s, cell));
  };
  std::string out = fmt::format("<table class=\"shape\" id=\"shape-{}\">\n<caption>#{} {}</caption>\n", s.index,
                                s.index, esc(s.name));
  out += row("verdict", fmt::format("<span class=\"verdict {}\">{}</span> <span class=\"dim\">{}</span>",
                                    verdict_class(s.verdict), esc_or_missing(s.verdict), esc(s.detail.value_or(""))));
  out += row("speedup", !s.speedup && !s.speedup_low && !s.speedup_high
                           ? std::string(missing)
                           : fmt::format("{} [{}, {}]", ratio_or_missing(s.speedup), ratio_or_missing(s.speedup_low),
                                         ratio_or_missing(s.speedup_high)));
  out += row("work", fmt::format("{}, {}{}", s.flops ? si(*s.flops, "FLOP") : std::string(missing),
                                 s.bytes ? si(*s.bytes, "B") : std::string(missing),
                                 s.flops && s.bytes ? fmt::format(", {:.3g} FLOP/byte", *s.flops / *s.bytes) : ""));
  out += row("floor time", seconds_or_missing(s.floor_seconds));
  out += fmt::format("<tr class=\"sides\"><th></th><th>candidate: {}</th><th>baseline: {}</th></tr>\n",
                     esc(names.candidate), esc(names.baseline));
  out += sides("verdict", [](const Side& d) {
    return fmt::format("{} <span class=\"dim\">{}</span>", esc_or_missing(d.verdict), esc(d.detail.value_or("")));
  });
  out += sides("cold median", [](const Side& d) { return seconds_or_missing(d.cold.median); });
  out += sides("cold IQR", [](const Side& d) {
    if (!d.cold.q1 && !d.cold.q3) return std::string(missing);
    std::string iqr = seconds_or_missing(d.cold.q1) + " – " + seconds_or_missing(d.cold.q3);
    if (d.cold.noise) iqr += fmt::format(" <span class=\"dim\">(noise {:.2f} %)</span>", *d.cold.noise * 100);
    return iqr;
  });
  out += sides("cold samples", [](const Side& d) {
    std::string n = count_or_missing(d.cold.samples);
    std::vector<std::string> notes;
    if (d.cold.stop) notes.push_back(esc(*d.cold.stop));
    if (d.cold.discarded) notes.push_back(fmt::format("{:.0f} discarded", *d.cold.discarded));
    if (d.cold.clock_mhz) notes.push_back(fmt::format("{:.0f} MHz", *d.cold.clock_mhz));
    if (!notes.empty()) n += fmt::format(" <span class=\"dim\">({})</span>", fmt::join(notes, ", "));
    return n;
  });
  out += sides("hot median", [](const Side& d) { return seconds_or_missing(d.hot.median); });
  out += sides("FLOP/s", [](const Side& d) { return d.flops_per_s ? si(*d.flops_per_s, "FLOP/s") : std::string(missing); });
  out += sides("bytes/s", [](const Side& d) { return d.bytes_per_s ? si(*d.bytes_per_s, "B/s") : std::string(missing); });
  return out + "</table>\n";
}

constexpr std::string_view style = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
.candidate { color: #1f6fb4; } .baseline { color: #e0701b; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
.dim { color: #777; }
.claim { font-weight: 600; padding: 6px 10px; border-radius: 4px; display: inline-block; }
.claim.holds { background: #e3f4e3; color: #1b6b1b; } .claim.fails { background: #fbe3e3; color: #a31b1b; }
.claim.unknown, .claim.none { background: #eee; color: #555; }
figure { margin: 0; } figcaption { color: #555; font-size: 13px; }
svg.plot { max-width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg .area { fill: #fcfcfc; stroke: #999; } svg .grid { stroke: #e4e4e4; }
svg .tick { fill: #444; } svg .axis { fill: #222; font-size: 12px; }
svg .whisker { fill: none; stroke-width: 1.5; } svg .floor { stroke: #555; stroke-width: 2; stroke-dasharray: 3 2; }
svg .one { stroke: #222; stroke-width: 1; stroke-dasharray: 5 3; }
svg .bar.faster, .verdict.faster { fill: #3a9a3a; color: #1b6b1b; }
svg .bar.slower, .verdict.slower { fill: #d04040; color: #a31b1b; }
svg .bar.same, .verdict.same { fill: #9a9a9a; color: #555; }
.verdict.failure { color: #a31b1b; } .verdict { font-weight: 600; }
svg .gap { fill: #a31b1b; font-size: 12px; font-weight: 600; }
svg .nodata { fill: #777; font-size: 14px; }
svg .roof { fill: none; stroke: #555; stroke-width: 2; } svg .roof-label { fill: #555; }
svg .value { fill: #333; font-size: 10px; }
table.shape { border-collapse: collapse; margin: 0 0 18px; min-width: 640px; }
table.shape caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.shape th, table.shape td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.shape th { background: #f6f6f6; font-weight: 600; } table.shape tr.sides th { background: #eef2f7; }
.empty { font-size: 16px; padding: 12px; background: #f3f3f3; }
)";

// Marks every plot with how many of its marks the browser drew at a size
// (getBBox), and the body with how many plots drew any: what the headless
// browser test reads back.
constexpr std::string_view measure_script = R"(
addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot'), drawn = 0;
  for (var i = 0; i < plots.length; ++i) {
    var marks = plots[i].querySelectorAll('.mark'), n = 0;
    for (var k = 0; k < marks.length; ++k) {
      var box = marks[k].getBBox ? marks[k].getBBox() : null;
      if (box && (box.width > 0 || box.height > 0)) ++n;
    }
    plots[i].setAttribute('data-drawn', String(n));
    if (n > 0) ++drawn;
  }
  document.body.setAttribute('data-plots-drawn', String(drawn));
});
)";

std::string figure(std::string_view heading, const std::string& svg, std::string_view caption) {
  return fmt::format("<section>\n<h2>{}</h2>\n<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n</section>\n",
                     heading, svg, caption);
}

}  // namespace

std::string bench_html(const json& report) {
  const Names names{text(member(&report, {"candidate", "name"})).value_or("candidate"),
                    text(member(&report, {"baseline", "name"})).value_or("baseline")};
  const std::vector<Shape> shapes = read_shapes(report);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing may be fetched: the page must read the same offline and in ten years.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>assay bench: {} vs {}</title>\n<style>{}</style>\n</head>\n<body>\n", esc(names.candidate),
                     esc(names.baseline), style);
  out += header(report, names);
  out += "<main>\n";
  if (shapes.empty()) {
    out += "<p class=\"empty\">This report has no shapes: nothing was timed.</p>\n";
  } else {
    out += figure("Time per shape", time_plot(shapes, names),
                  "Cold runs (L2 flushed before each call): the median as a marker, the interquartile range as "
                  "whiskers; the dashed line is the floor, the fastest time the device's peaks allow.");
    out += figure("Speedup per shape", speedup_plot(shapes),
                  "Baseline median over candidate median; a difference is called only when the interquartile "
                  "ranges do not overlap. A failed shape has no bar: its verdict stands in the gap.");
    out += figure("Roofline", roofline_plot(shapes, report, names),
                  "Achieved FLOP/s against FLOPs per byte moved; the roof is the device's peak FLOP/s and its "
                  "bandwidth slope.");
    out += "<section>\n<h2>Shapes</h2>\n";
    for (const Shape& s : shapes) out += shape_table(s, names);
    out += "</section>\n";
  }
  out += fmt::format("</main>\n<footer class=\"dim\"><p>{} · {}</p></footer>\n",
                     esc(text(member(&report, "tool")).value_or("assay bench")),
                     esc_or_missing(text(member(&report, {"build", "line"}))));
  out += fmt::format("<script>{}</script>\n</body>\n</html>\n", measure_script);
  return out;
}

}  // namespace assay
