#include "serve/charts.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

using namespace optimas::serve;

namespace {

RooflineChart h200_like() {
  RooflineChart c;
  c.kernel = "triad_kernel";
  c.ceilings = {{"DRAM", 4.8e12, true}, {"FP64", 3.3e13, false}};
  c.points = {{"before", 0.0847, 3.6e11}, {"after", 0.0847, 7.2e11}};
  return c;
}

// The centre of the circle with that data-label.
std::pair<double, double> point_of(const std::string& svg, const std::string& label) {
  std::smatch m;
  std::regex re("data-label=\"" + label + "\" cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  if (!std::regex_search(svg, m, re)) return {NAN, NAN};
  return {std::stod(m[1]), std::stod(m[2])};
}

} // namespace

TEST(ServeCharts, FrameMapsDecadesEvenly) {
  LogFrame f;
  f.x_min = 1e-2, f.x_max = 1e2, f.y_min = 1e9, f.y_max = 1e13;
  EXPECT_DOUBLE_EQ(f.px(1e-2), f.left);
  EXPECT_DOUBLE_EQ(f.px(1e2), f.left + f.width);
  EXPECT_NEAR(f.px(1), f.left + f.width / 2, 1e-9);
  EXPECT_DOUBLE_EQ(f.py(1e13), f.top);
  EXPECT_DOUBLE_EQ(f.py(1e9), f.top + f.height);
  EXPECT_NEAR(f.py(1e11), f.top + f.height / 2, 1e-9);
}

TEST(ServeCharts, FrameHoldsThePointsAndTheRidge) {
  auto c = h200_like();
  LogFrame f = roofline_frame(c);
  EXPECT_LE(f.x_min, 0.0847);
  EXPECT_GE(f.x_max, 3.3e13 / 4.8e12); // the ridge point
  EXPECT_LE(f.y_min, 3.6e11);
  EXPECT_GE(f.y_max, 3.3e13);
  EXPECT_EQ(std::log10(f.x_min), std::round(std::log10(f.x_min))); // whole decades
}

TEST(ServeCharts, RooflinePointSitsAtItsIntensityAndFlops) {
  auto c = h200_like();
  LogFrame f = roofline_frame(c);
  std::string svg = roofline_svg(c);
  auto [bx, by] = point_of(svg, "before");
  EXPECT_NEAR(bx, f.px(0.0847), 0.01);
  EXPECT_NEAR(by, f.py(3.6e11), 0.01);
  // Twice the FLOP/s at the same intensity: straight above by log10(2) of a decade.
  auto [ax, ay] = point_of(svg, "after");
  double decade = f.height / (std::log10(f.y_max) - std::log10(f.y_min));
  EXPECT_NEAR(ax, bx, 0.01);
  EXPECT_NEAR(by - ay, decade * std::log10(2.0), 0.02);
}

// The label's baseline after the circle with that data-label.
double label_y(const std::string& svg, const std::string& label) {
  std::smatch m;
  std::regex re("data-label=\"" + label + "\"[^\n]*<text x=\"[0-9.]+\" y=\"([0-9.]+)\">" + label + "</text>");
  if (!std::regex_search(svg, m, re)) return NAN;
  return std::stod(m[1]);
}

// An edit that changed little leaves "after" on "before": the labels are moved apart, the
// points are not.
TEST(ServeCharts, LabelsOfPointsCloseTogetherDoNotOverlap) {
  auto c = h200_like();
  c.points[1].flops = 3.62e11;
  std::string svg = roofline_svg(c);
  EXPECT_NEAR(point_of(svg, "after").second, point_of(svg, "before").second, 1.0);
  EXPECT_GE(std::abs(label_y(svg, "after") - label_y(svg, "before")), 13.0) << svg;
  // Far apart, each label stays beside its own point.
  c.points[1].flops = 7.2e11;
  svg = roofline_svg(c);
  EXPECT_NEAR(label_y(svg, "after"), point_of(svg, "after").second + 4, 0.01);
}

TEST(ServeCharts, APointOnTheBandwidthCeilingIsOnItsLine) {
  RooflineChart c = h200_like();
  c.points = {{"before", 1.0, 4.8e12}}; // exactly DRAM bandwidth x intensity
  std::string svg = roofline_svg(c);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("data-name=\"DRAM\" x1=\"([0-9.]+)\" y1=\"([0-9.]+)\" x2=\"([0-9.]+)\" y2=\"([0-9.]+)\"")));
  double x1 = std::stod(m[1]), y1 = std::stod(m[2]), x2 = std::stod(m[3]), y2 = std::stod(m[4]);
  auto [px, py] = point_of(svg, "before");
  ASSERT_GT(px, x1);
  ASSERT_LT(px, x2);
  EXPECT_NEAR(py, y1 + (y2 - y1) * (px - x1) / (x2 - x1), 0.05);
  // The compute ceiling starts where the bandwidth line ends (the ridge point).
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("data-name=\"FP64\" x1=\"([0-9.]+)\" y1=\"([0-9.]+)\"")));
  EXPECT_NEAR(std::stod(m[1]), x2, 0.01);
  EXPECT_NEAR(std::stod(m[2]), y2, 0.01);
}

TEST(ServeCharts, AKernelWithoutFlopsIsNamedNotDrawn) {
  RooflineChart c = h200_like();
  c.points = {{"before", 0.0, 0.0}};
  std::string svg = roofline_svg(c);
  EXPECT_EQ(svg.find("class=\"point\""), std::string::npos);
  EXPECT_NE(svg.find("before: no floating-point work measured"), std::string::npos);
}

TEST(ServeCharts, ChartFromDiagnosticsJson) {
  nlohmann::json rf = {{"flops", 2e11}, {"intensity", {{"dram", 0.5}}},
                       {"memory", {{{"name", "DRAM"}, {"peak", 4e12}}, {{"name", "L1"}, {"peak", nullptr}}}},
                       {"compute", {{{"name", "FP32"}, {"peak", 6e13}}}}};
  auto c = roofline_chart("k", rf, nullptr);
  ASSERT_EQ(c.ceilings.size(), 2u); // L1 has no peak
  EXPECT_TRUE(c.ceilings[0].memory);
  ASSERT_EQ(c.points.size(), 1u);
  EXPECT_DOUBLE_EQ(c.points[0].intensity, 0.5);
  EXPECT_EQ(roofline_chart("k", rf, rf).points.size(), 2u);
}

TEST(ServeCharts, QuantilesInterpolate) {
  std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(v, 1), 4);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

TEST(ServeCharts, MeasurementPlotShowsEverySampleAndTheInterval) {
  MeasurementChart c;
  c.groups = {{"default: baseline", {10, 11, 12, 13, 14}}, {"default: i1a1", {5, 5.5, 6}}};
  c.speedup = 2.0, c.ci_low = 1.7, c.ci_high = 2.3;
  std::string svg = measurement_svg(c);
  std::size_t samples = 0;
  for (auto p = svg.find("class=\"sample\""); p != std::string::npos; p = svg.find("class=\"sample\"", p + 1)) ++samples;
  EXPECT_EQ(samples, 8u);
  EXPECT_NE(svg.find("data-low=\"1.7\" data-high=\"2.3\""), std::string::npos);
  EXPECT_NE(svg.find("(n=3)"), std::string::npos);
  c.speedup = 0;
  EXPECT_EQ(measurement_svg(c).find("class=\"ci\""), std::string::npos);
}
