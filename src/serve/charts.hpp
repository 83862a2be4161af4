// SVG charts drawn by our own code (no script, no library): the roofline with a kernel's point
// before and after an edit, and the measured samples with the speedup's bootstrap interval.
// Every label goes through escape(); the charts read without JavaScript.
#pragma once

#include <nlohmann/json.hpp>

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

} // namespace optimas::serve
