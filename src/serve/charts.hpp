// SVG charts drawn by our own code (no script, no library): the roofline with a kernel's point
// before and after an edit, the measured samples with the speedup's bootstrap interval, and a
// campaign's speedups and rates per diagnostic subset and backend.
// Every label goes through escape(); the charts read without JavaScript.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

namespace optimas::serve {

// A ceiling of the roofline: a memory level's bandwidth (byte/s) or a precision's peak (FLOP/s).
struct Ceiling {
  std::string name;
  double peak = 0;
  bool memory = false;
};

// A kernel's place on the roofline: DRAM arithmetic intensity (FLOP/byte), FLOP/s.
struct RooflinePoint {
  std::string label; // "before", "after"
  double intensity = 0;
  double flops = 0;
};

struct RooflineChart {
  std::string kernel;
  std::vector<Ceiling> ceilings;
  std::vector<RooflinePoint> points;
};

// A log-log plotting frame: data range in whole decades, and where it lies in the picture.
struct LogFrame {
  double x_min = 1e-2, x_max = 1e3, y_min = 1e9, y_max = 1e14;
  double left = 70, top = 16, width = 430, height = 250;
  double px(double x) const; // picture x of an intensity
  double py(double y) const; // picture y of a FLOP/s value
};

// The chart's data from a kernel's "roofline" object of diagnostics.json (analysis/json.cpp),
// with `after` (the same object from the variant's re-profile, or null) as a second point.
RooflineChart roofline_chart(const std::string& kernel, const nlohmann::json& before, const nlohmann::json& after);

// The decades that hold every point and every ceiling's ridge point.
LogFrame roofline_frame(const RooflineChart& chart);

// <svg>: ceilings as lines (class "ceiling", data-name), points as circles (class "point",
// data-label), a point that cannot sit on log axes (no FLOPs) named in a note below.
std::string roofline_svg(const RooflineChart& chart);

// A group of timed samples (ms) of one program on one configuration.
struct SampleGroup {
  std::string label; // "default: baseline"
  std::vector<double> values;
};

struct MeasurementChart {
  std::vector<SampleGroup> groups;
  double speedup = 0; // NaN or 0 when there is none
  double ci_low = 0, ci_high = 0;
};

// Samples as dots over a box (quartiles, whiskers to the extremes), then the speedup and its
// 95% bootstrap interval on an axis with 1x marked.
std::string measurement_svg(const MeasurementChart& chart);

// Quantile q in [0, 1] of sorted values, linear between neighbours.
double quantile(const std::vector<double>& sorted, double q);

// One row of a campaign's table (table.json's rows: a diagnostic subset and a backend); NaN
// where the table has null or no number, n -1 when unknown.
struct CampaignBar {
  std::string subset, backend;
  double geomean = std::numeric_limits<double>::quiet_NaN(), ci_low = geomean, ci_high = geomean;
  long n = -1;
  double valid_edit_rate = geomean, accepted_rate = geomean;
};

struct CampaignChart {
  std::vector<std::string> subsets;  // along the x axis, in the table's order
  std::vector<std::string> backends; // one colour each, in the table's order
  std::vector<CampaignBar> bars;
};

// The chart's data from table.json's "rows" (anything else reads as no rows); rows without a
// subset or backend label are left out.
CampaignChart campaign_chart(const nlohmann::json& rows);

// The colour of the i-th backend, the same in every campaign chart and the legend.
std::string backend_colour(std::size_t i);

// Per subset, each backend's geometric-mean speedup (a circle, class "geomean") with its
// interval (a line, class "interval"), a dashed reference line at 1x (class "reference"), and
// a legend of the backends; a row without a speedup shows an en dash (class "none").
std::string campaign_speedup_svg(const CampaignChart& chart);

// The valid-edit rate and the accepted rate (0-100 %) as bars (class "rate", data-kind
// valid_edit or accepted), one panel each, in the same layout as campaign_speedup_svg.
std::string campaign_rates_svg(const CampaignChart& chart);

} // namespace optimas::serve
