#include "serve/charts.hpp"

#include "serve/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace optimas::serve {

using nlohmann::json;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

double number(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return k_nan;
  return object[key].get<double>();
}

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}

double decade_below(double v) {
  return std::pow(10.0, std::floor(std::log10(v)));
}
double decade_above(double v) {
  return std::pow(10.0, std::ceil(std::log10(v)));
}

// "0.01", "1", "1e+03" for a decade.
std::string decade_label(double v, const char* unit) {
  if (unit[0]) return si(v) + unit;
  return fmt::format("{:g}", v);
}

// `label_dy` moves the label down, so that the labels of two points close together do not
// overlap (an edit that changed little leaves "after" on top of "before").
std::string point_svg(const LogFrame& f, const RooflinePoint& p, double label_dy = 0) {
  double x = f.px(p.intensity), y = f.py(p.flops);
  bool before = p.label == "before";
  return fmt::format("<circle class=\"point\" data-label=\"{0}\" cx=\"{1:.2f}\" cy=\"{2:.2f}\" r=\"5\" fill=\"{3}\" "
                     "stroke=\"#111\"><title>{0}: {4:.3g} FLOP/byte, {5}FLOP/s</title></circle>"
                     "<text x=\"{6:.2f}\" y=\"{7:.2f}\">{0}</text>\n",
                     attr(p.label), x, y, before ? "#f59e0b" : "#16a34a", p.intensity, si(p.flops), x + 8,
                     y + 4 + label_dy);
}

} // namespace

double LogFrame::px(double x) const {
  return left + width * (std::log10(x) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min));
}

double LogFrame::py(double y) const {
  return top + height * (std::log10(y_max) - std::log10(y)) / (std::log10(y_max) - std::log10(y_min));
}

RooflineChart roofline_chart(const std::string& kernel, const json& before, const json& after) {
  RooflineChart c;
  c.kernel = kernel;
  for (const char* kind : {"memory", "compute"})
    if (before.is_object() && before.contains(kind) && before[kind].is_array())
      for (const auto& t : before[kind]) {
        double peak = number(t, "peak");
        if (positive(peak)) c.ceilings.push_back({t.value("name", "?"), peak, kind[0] == 'm'});
      }
  auto add = [&](const char* label, const json& r) {
    if (!r.is_object()) return;
    const json& in = r.contains("intensity") ? r["intensity"] : json();
    c.points.push_back({label, number(in, "dram"), number(r, "flops")});
  };
  add("before", before);
  add("after", after);
  return c;
}

LogFrame roofline_frame(const RooflineChart& chart) {
  LogFrame f;
  double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0, bw_max = 0, peak_max = 0;
  for (const auto& c : chart.ceilings) (c.memory ? bw_max : peak_max) = std::max(c.memory ? bw_max : peak_max, c.peak);
  for (const auto& p : chart.points)
    if (positive(p.intensity) && positive(p.flops)) {
      x_lo = std::min(x_lo, p.intensity), x_hi = std::max(x_hi, p.intensity);
      y_lo = std::min(y_lo, p.flops), y_hi = std::max(y_hi, p.flops);
    }
  if (positive(bw_max) && positive(peak_max)) {
    double ridge = peak_max / bw_max;
    x_lo = std::min(x_lo, ridge), x_hi = std::max(x_hi, ridge);
    y_hi = std::max(y_hi, peak_max);
  }
  if (positive(peak_max)) y_hi = std::max(y_hi, peak_max);
  if (x_hi <= 0) x_lo = 1e-2, x_hi = 1e2;
  if (y_hi <= 0) y_lo = 1e9, y_hi = 1e13;
  if (y_lo > y_hi) y_lo = y_hi / 1e4;
  f.x_min = decade_below(x_lo / 3), f.x_max = decade_above(x_hi * 3);
  f.y_min = decade_below(std::min(y_lo / 3, y_hi / 1e3)), f.y_max = decade_above(y_hi * 1.5);
  return f;
}

// One function draws the whole chart: axes, decades, ceilings, points, legend.
std::string roofline_svg(const RooflineChart& chart) {
  LogFrame f = roofline_frame(chart);
  double w = f.left + f.width + 120, h = f.top + f.height + 46;
  std::string s =
      fmt::format("<svg class=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                  "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"roofline of {2}\">\n"
                  "<rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\" fill=\"#fafbfc\" stroke=\"#9ca3af\"/>\n",
                  w, h, attr(chart.kernel), f.left, f.top, f.width, f.height);
  for (double x = f.x_min; x <= f.x_max * 1.0001; x *= 10)
    s += fmt::format("<line x1=\"{0:.2f}\" x2=\"{0:.2f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e5e7eb\"/>"
                     "<text x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     f.px(x), f.top, f.top + f.height, f.top + f.height + 14, decade_label(x, ""));
  for (double y = f.y_min; y <= f.y_max * 1.0001; y *= 10)
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.2f}\" y2=\"{2:.2f}\" stroke=\"#e5e7eb\"/>"
                     "<text x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5}</text>\n",
                     f.left, f.left + f.width, f.py(y), f.left - 4, f.py(y) + 4, decade_label(y, "FLOP/s"));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte, DRAM)</text>\n",
                   f.left + f.width / 2, f.top + f.height + 32);
  double peak_max = 0, bw_max = 0;
  for (const auto& c : chart.ceilings) (c.memory ? bw_max : peak_max) = std::max(c.memory ? bw_max : peak_max, c.peak);
  int legend = 0;
  for (const auto& c : chart.ceilings) {
    double x1, y1, x2, y2;
    if (c.memory) { // y = bandwidth * intensity, up to the highest compute peak
      x1 = std::max(f.x_min, f.y_min / c.peak),
      x2 = positive(peak_max) ? std::min(f.x_max, peak_max / c.peak) : f.x_max;
      y1 = c.peak * x1, y2 = c.peak * x2;
    } else { // flat, from where the fastest memory reaches it
      x1 = positive(bw_max) ? std::max(f.x_min, c.peak / bw_max) : f.x_min, x2 = f.x_max;
      y1 = y2 = c.peak;
    }
    if (x2 <= x1 || y1 > f.y_max * 1.0001) continue;
    // Labels go to a legend on the right: the memory lines all end at the same height.
    s += fmt::format(
        "<line class=\"ceiling\" data-name=\"{0}\" x1=\"{1:.2f}\" y1=\"{2:.2f}\" x2=\"{3:.2f}\" y2=\"{4:.2f}\" "
        "stroke=\"{5}\" stroke-width=\"1.5\"/><text x=\"{6:.2f}\" y=\"{7:.2f}\" fill=\"{5}\">{0} {8}</text>\n",
        attr(c.name), f.px(x1), f.py(y1), f.px(x2), f.py(y2), c.memory ? "#2563eb" : "#dc2626", f.left + f.width + 8,
        f.top + 12 + 14.0 * static_cast<double>(legend++), attr(si(c.peak) + (c.memory ? "B/s" : "FLOP/s")));
  }
  std::string notes;
  std::vector<std::pair<double, double>> labelled; // where earlier points' labels are
  for (const auto& p : chart.points) {
    if (positive(p.intensity) && positive(p.flops)) {
      double x = f.px(p.intensity), y = f.py(p.flops), dy = 0;
      for (const auto& [lx, ly] : labelled)
        if (std::abs(lx - x) < 40 && std::abs(ly - (y + dy)) < 13) dy = ly - y + 14;
      labelled.emplace_back(x, y + dy);
      s += point_svg(f, p, dy);
    } else {
      notes += (notes.empty() ? "" : "; ") + p.label + ": no floating-point work measured, not on the roofline";
    }
  }
  if (!notes.empty())
    s +=
        fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">{}</text>\n", f.left, f.top + f.height + 44, escape(notes));
  return s + "</svg>\n";
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return k_nan;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// Rows of samples on one linear time axis, then the speedup's interval on its own axis.
std::string measurement_svg(const MeasurementChart& chart) {
  const double left = 170, width = 420, row = 34, top = 10;
  double lo = 1e300, hi = -1e300;
  for (const auto& g : chart.groups)
    for (double v : g.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) lo = 0, hi = 1;
  double pad = (hi - lo) * 0.08 + 1e-9;
  lo = std::max(0.0, lo - pad), hi += pad;
  auto x = [&](double v) { return left + width * (v - lo) / (hi - lo); };
  double axis_y = top + row * static_cast<double>(chart.groups.size());
  bool has_ci = positive(chart.speedup) && positive(chart.ci_low) && positive(chart.ci_high);
  double h = axis_y + 36 + (has_ci ? 62 : 0);
  std::string s =
      fmt::format("<svg class=\"samples\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                  "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"measured samples\">\n",
                  left + width + 30, h);
  for (std::size_t i = 0; i < chart.groups.size(); ++i) {
    std::vector<double> v;
    for (double d : chart.groups[i].values)
      if (std::isfinite(d)) v.push_back(d);
    std::sort(v.begin(), v.end());
    double cy = top + row * (static_cast<double>(i) + 0.5);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{} (n={})</text>\n", left - 8, cy + 4,
                     escape(chart.groups[i].label), v.size());
    if (v.empty()) continue;
    double q1 = quantile(v, 0.25), q2 = quantile(v, 0.5), q3 = quantile(v, 0.75);
    s += fmt::format("<line x1=\"{0:.2f}\" x2=\"{1:.2f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#6b7280\"/>"
                     "<rect class=\"box\" x=\"{3:.2f}\" y=\"{4:.1f}\" width=\"{5:.2f}\" height=\"16\" fill=\"#dbeafe\" "
                     "stroke=\"#2563eb\"/>"
                     "<line class=\"median\" x1=\"{6:.2f}\" x2=\"{6:.2f}\" y1=\"{4:.1f}\" y2=\"{7:.1f}\" "
                     "stroke=\"#1e3a8a\" stroke-width=\"2\"/>\n",
                     x(v.front()), x(v.back()), cy, x(q1), cy - 8, std::max(1.0, x(q3) - x(q1)), x(q2), cy + 8);
    for (std::size_t k = 0; k < v.size(); ++k) // a fixed spread keeps equal samples apart
      s += fmt::format("<circle class=\"sample\" cx=\"{:.2f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"#111\" "
                       "fill-opacity=\"0.6\"><title>{:.4g} ms</title></circle>",
                       x(v[k]), cy - 6 + 12.0 * static_cast<double>(k % 5) / 4.0, v[k]);
    s += "\n";
  }
  s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#111\"/>", left, left + width, axis_y);
  for (int t = 0; t <= 4; ++t) {
    double v = lo + (hi - lo) * t / 4;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.4g}</text>", x(v), axis_y + 14, v);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time (ms)</text>\n", left + width / 2, axis_y + 28);
  if (has_ci) {
    double a = std::min({1.0, chart.ci_low}) * 0.9, b = std::max({1.0, chart.ci_high}) * 1.1;
    auto sx = [&](double v) { return left + width * (v - a) / (b - a); };
    double y = axis_y + 52;
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">speedup, 95% bootstrap CI</text>"
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#111\"/>"
        "<line x1=\"{:.2f}\" x2=\"{:.2f}\" y1=\"{}\" y2=\"{}\" stroke=\"#9ca3af\" stroke-dasharray=\"3 3\"/>"
        "<text x=\"{:.2f}\" y=\"{}\" text-anchor=\"middle\">1x</text>\n",
        left - 8, y + 4, left, left + width, y + 14, y + 14, sx(1), sx(1), y - 12, y + 14, sx(1), y + 26);
    s += fmt::format(
        "<line class=\"ci\" data-low=\"{0:g}\" data-high=\"{1:g}\" x1=\"{2:.2f}\" x2=\"{3:.2f}\" y1=\"{4}\" y2=\"{4}\" "
        "stroke=\"#16a34a\" stroke-width=\"4\"/><circle cx=\"{5:.2f}\" cy=\"{4}\" r=\"5\" fill=\"#16a34a\">"
        "<title>{6:.3g}x [{0:.3g}, {1:.3g}]</title></circle>"
        "<text x=\"{5:.2f}\" y=\"{7}\" text-anchor=\"middle\">{6:.3g}x [{0:.3g}, {1:.3g}]</text>\n",
        chart.ci_low, chart.ci_high, sx(chart.ci_low), sx(chart.ci_high), y, sx(chart.speedup), chart.speedup, y - 10);
  }
  return s + "</svg>\n";
}

// ---- Campaign charts ----------------------------------------------------------------------

namespace {

// One slot per subset along x, one lane per backend inside it; both campaign charts share it so
// that a subset sits at the same place in each.
struct Slots {
  double left = 64, top = 30, slot = 96, height = 190;
  std::size_t subsets = 0, backends = 1;
  double lane(std::size_t s, std::size_t b) const {
    double lanes = static_cast<double>(backends), used = std::min(slot - 24, 18.0 * lanes);
    return left + slot * static_cast<double>(s) + (slot - used) / 2 + used * (static_cast<double>(b) + 0.5) / lanes;
  }
  double right() const { return left + slot * static_cast<double>(subsets); }
};

Slots slots_for(const CampaignChart& c) {
  Slots s;
  s.subsets = std::max<std::size_t>(1, c.subsets.size());
  s.backends = std::max<std::size_t>(1, c.backends.size());
  s.slot = std::max(96.0, 18.0 * static_cast<double>(s.backends) + 24);
  return s;
}

std::size_t index_of(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

// The backends' colours in a row above the plot.
std::string legend_svg(const CampaignChart& c, double x, double y) {
  std::string s;
  for (std::size_t b = 0; b < c.backends.size(); ++b) {
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                     "<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                     x, y - 9, backend_colour(b), x + 14, y, escape(c.backends[b]));
    x += 24 + 6.5 * static_cast<double>(c.backends[b].size());
  }
  return s + "\n";
}

// Subset names under the plot, each under its slot; long ones slanted so they do not overlap.
std::string subset_labels_svg(const CampaignChart& c, const Slots& sl, double y) {
  bool slant = std::any_of(c.subsets.begin(), c.subsets.end(), [](const std::string& n) { return n.size() > 15; });
  std::string s;
  for (std::size_t i = 0; i < c.subsets.size(); ++i) {
    double x = sl.left + sl.slot * (static_cast<double>(i) + 0.5);
    s += slant ? fmt::format("<text class=\"subset\" x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"end\" "
                             "transform=\"rotate(-30 {0:.1f} {1:.1f})\">{2}</text>",
                             x, y, escape(c.subsets[i]))
               : fmt::format("<text class=\"subset\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", x, y,
                             escape(c.subsets[i]));
  }
  return s + "\n";
}

// A step of 1, 2, 2.5 or 5 times a power of ten giving about five ticks over `range`.
double tick_step(double range) {
  double raw = range / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

std::string svg_open(const char* cls, double w, double h, const std::string& label) {
  return fmt::format("<svg class=\"{0}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{1:.0f}\" height=\"{2:.0f}\" "
                     "viewBox=\"0 0 {1:.0f} {2:.0f}\" role=\"img\" aria-label=\"{3}\">\n",
                     cls, w, h, attr(label));
}

// One panel of rates: a frame, 0-100 % gridlines, a bar per row that has the rate.
std::string rate_panel(const CampaignChart& c, const Slots& sl, double CampaignBar::*rate, const char* kind,
                       const char* title) {
  auto y = [&](double v) { return sl.top + sl.height * (1 - v); };
  std::string s = fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n", sl.left, sl.top - 8, title);
  for (int t = 0; t <= 4; ++t)
    s += fmt::format("<line x1=\"{0}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e7eb\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}%</text>",
                     sl.left, sl.right(), y(t / 4.0), sl.left - 4, y(t / 4.0) + 4, t * 25);
  s += fmt::format("\n<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"none\" stroke=\"#9ca3af\"/>\n",
                   sl.left, sl.top, sl.right() - sl.left, sl.height);
  double bar = std::min(16.0, (sl.slot - 24) / static_cast<double>(sl.backends));
  for (const auto& b : c.bars) {
    double v = b.*rate, x = sl.lane(index_of(c.subsets, b.subset), index_of(c.backends, b.backend));
    if (!std::isfinite(v)) {
      s += fmt::format(
          "<text class=\"none\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">\xE2\x80\x93<title>{}, {}: "
          "unknown</title></text>\n",
          x, y(0) - 4, escape(b.subset), escape(b.backend));
      continue;
    }
    v = std::clamp(v, 0.0, 1.0);
    s += fmt::format(
        "<rect class=\"rate\" data-kind=\"{0}\" data-subset=\"{1}\" data-backend=\"{2}\" data-value=\"{3:g}\" "
        "x=\"{4:.2f}\" y=\"{5:.2f}\" width=\"{6:.2f}\" height=\"{7:.2f}\" fill=\"{8}\">"
        "<title>{1}, {2}: {9:.0f}%</title></rect>\n",
        kind, attr(b.subset), attr(b.backend), v, x - bar / 2, y(v), bar, std::max(0.0, y(0) - y(v)),
        backend_colour(index_of(c.backends, b.backend)), 100 * v);
  }
  return s;
}

} // namespace

CampaignChart campaign_chart(const json& rows) {
  CampaignChart c;
  if (!rows.is_array()) return c;
  for (const auto& r : rows) {
    if (!r.is_object() || !r.contains("diagnostics") || !r["diagnostics"].is_string() || !r.contains("backend") ||
        !r["backend"].is_string())
      continue;
    CampaignBar b;
    b.subset = r["diagnostics"].get<std::string>();
    b.backend = r["backend"].get<std::string>();
    const json& sp = r.contains("speedup") ? r["speedup"] : json();
    b.geomean = number(sp, "geomean"), b.ci_low = number(sp, "ci_low"), b.ci_high = number(sp, "ci_high");
    if (sp.is_object() && sp.contains("n") && sp["n"].is_number_integer()) b.n = sp["n"].get<long>();
    b.valid_edit_rate = number(r, "valid_edit_rate"), b.accepted_rate = number(r, "accepted_rate");
    if (index_of(c.subsets, b.subset) == c.subsets.size()) c.subsets.push_back(b.subset);
    if (index_of(c.backends, b.backend) == c.backends.size()) c.backends.push_back(b.backend);
    c.bars.push_back(std::move(b));
  }
  return c;
}

std::string backend_colour(std::size_t i) {
  static const char* palette[] = {"#2563eb", "#f59e0b", "#16a34a", "#dc2626",
                                  "#7c3aed", "#0891b2", "#db2777", "#65a30d"};
  return palette[i % std::size(palette)];
}

// One function draws the whole chart: frame, ticks, the 1x line, each row's interval and point.
std::string campaign_speedup_svg(const CampaignChart& c) {
  Slots sl = slots_for(c);
  double lo = 1, hi = 1;
  for (const auto& b : c.bars)
    for (double v : {b.geomean, b.ci_low, b.ci_high})
      if (positive(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  double step = tick_step((hi - lo) * 1.1 + 1e-9);
  lo = std::floor((lo - (hi - lo) * 0.05) / step) * step, hi = std::ceil((hi + (hi - lo) * 0.05) / step) * step;
  if (hi <= lo) hi = lo + step;
  auto y = [&](double v) { return sl.top + sl.height * (hi - v) / (hi - lo); };
  bool slant = std::any_of(c.subsets.begin(), c.subsets.end(), [](const std::string& n) { return n.size() > 15; });
  double h = sl.top + sl.height + (slant ? 90 : 40);
  std::string s =
      svg_open("campaign-speedup", sl.right() + 20, h, "geometric-mean speedup per diagnostic subset and backend");
  s += legend_svg(c, sl.left, 14);
  for (double t = lo; t <= hi + step / 2; t += step)
    s += fmt::format("<line x1=\"{0}\" x2=\"{1:.1f}\" y1=\"{2:.2f}\" y2=\"{2:.2f}\" stroke=\"#e5e7eb\"/>"
                     "<text x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5:.3g}x</text>",
                     sl.left, sl.right(), y(t), sl.left - 4, y(t) + 4, t);
  s += fmt::format("\n<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"none\" stroke=\"#9ca3af\"/>\n"
                   "<line class=\"reference\" data-value=\"1\" x1=\"{}\" x2=\"{:.1f}\" y1=\"{:.2f}\" y2=\"{:.2f}\" "
                   "stroke=\"#111\" stroke-dasharray=\"4 3\"/>\n",
                   sl.left, sl.top, sl.right() - sl.left, sl.height, sl.left, sl.right(), y(1), y(1));
  for (const auto& b : c.bars) {
    std::size_t bi = index_of(c.backends, b.backend);
    double x = sl.lane(index_of(c.subsets, b.subset), bi);
    if (!positive(b.geomean)) {
      s += fmt::format(
          "<text class=\"none\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">\xE2\x80\x93<title>{}, {}: "
          "no speedup measured</title></text>\n",
          x, y(1) - 4, escape(b.subset), escape(b.backend));
      continue;
    }
    std::string colour = backend_colour(bi);
    bool ci = positive(b.ci_low) && positive(b.ci_high);
    if (ci)
      s +=
          fmt::format("<line class=\"interval\" data-subset=\"{0}\" data-backend=\"{1}\" x1=\"{2:.2f}\" x2=\"{2:.2f}\" "
                      "y1=\"{3:.2f}\" y2=\"{4:.2f}\" stroke=\"{5}\" stroke-width=\"2\"/>"
                      "<line x1=\"{6:.2f}\" x2=\"{7:.2f}\" y1=\"{3:.2f}\" y2=\"{3:.2f}\" stroke=\"{5}\"/>"
                      "<line x1=\"{6:.2f}\" x2=\"{7:.2f}\" y1=\"{4:.2f}\" y2=\"{4:.2f}\" stroke=\"{5}\"/>",
                      attr(b.subset), attr(b.backend), x, y(b.ci_low), y(b.ci_high), colour, x - 4, x + 4);
    std::string tip = fmt::format("{}, {}: {:.3g}x", b.subset, b.backend, b.geomean) +
                      (ci ? fmt::format(" [{:.3g}, {:.3g}]", b.ci_low, b.ci_high) : "") +
                      (b.n >= 0 ? fmt::format(", n={}", b.n) : "");
    s += fmt::format(
        "<circle class=\"geomean\" data-subset=\"{}\" data-backend=\"{}\" data-value=\"{:g}\" cx=\"{:.2f}\" "
        "cy=\"{:.2f}\" r=\"4.5\" fill=\"{}\" stroke=\"#111\"><title>{}</title></circle>\n",
        attr(b.subset), attr(b.backend), b.geomean, x, y(b.geomean), colour, escape(tip));
  }
  s += subset_labels_svg(c, sl, sl.top + sl.height + 16);
  return s + "</svg>\n";
}

std::string campaign_rates_svg(const CampaignChart& c) {
  Slots sl = slots_for(c);
  sl.height = 110;
  bool slant = std::any_of(c.subsets.begin(), c.subsets.end(), [](const std::string& n) { return n.size() > 15; });
  double panel = sl.top + sl.height + 10;
  std::string s = svg_open("campaign-rates", sl.right() + 20, 2 * panel + (slant ? 80 : 30) + 10,
                           "valid-edit and accepted rates per diagnostic subset and backend");
  s += legend_svg(c, sl.left + 160, 14);
  s += rate_panel(c, sl, &CampaignBar::valid_edit_rate, "valid_edit", "valid-edit rate");
  sl.top += panel;
  s += rate_panel(c, sl, &CampaignBar::accepted_rate, "accepted", "accepted rate");
  s += subset_labels_svg(c, sl, sl.top + sl.height + 16);
  return s + "</svg>\n";
}

} // namespace optimas::serve
