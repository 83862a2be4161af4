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

// ---- Campaign charts -----------------------------------------------------------------------

namespace {

nlohmann::json campaign_row(const std::string& subset, const std::string& backend, nlohmann::json geomean,
                            nlohmann::json low, nlohmann::json high, nlohmann::json valid, nlohmann::json accepted) {
  return {{"diagnostics", subset},
          {"backend", backend},
          {"valid_edit_rate", valid},
          {"accepted_rate", accepted},
          {"speedup", {{"geomean", geomean}, {"ci_low", low}, {"ci_high", high}, {"n", 2}}}};
}

nlohmann::json campaign_rows() {
  using nlohmann::json;
  return json::array({campaign_row("PC", "builtin", 1.08, 1.0, 1.17, 0.5, 0.5),
                      campaign_row("PC", "manual", 1.3, 1.2, 1.4, 1.0, 1.0),
                      campaign_row("PC+IA", "builtin", 0.9, 0.8, 1.05, 1.0, 0.0),
                      campaign_row("code-only", "builtin", nullptr, nullptr, nullptr, nullptr, nullptr),
                      campaign_row("code-only", "manual", 1.5, 1.1, 2.0, 0.25, nullptr)});
}

// The value of attribute `name` in the first element whose attributes include `selector_re` (a
// regular expression in which '+' stands for itself).
double svg_attr(const std::string& svg, const std::string& selector_re, const std::string& name) {
  std::smatch m;
  std::string selector = std::regex_replace(selector_re, std::regex(R"([+])"), R"(\+)"); // "PC+IA"
  std::regex re("<[a-z]+ [^>]*" + selector + "[^>]*\\b" + name + "=\"([-0-9.]+)\"");
  if (!std::regex_search(svg, m, re)) return NAN;
  return std::stod(m[1]);
}

} // namespace

TEST(ServeCharts, CampaignChartReadsTheTableRowsInOrder) {
  CampaignChart c = campaign_chart(campaign_rows());
  EXPECT_EQ(c.subsets, (std::vector<std::string>{"PC", "PC+IA", "code-only"}));
  EXPECT_EQ(c.backends, (std::vector<std::string>{"builtin", "manual"}));
  ASSERT_EQ(c.bars.size(), 5u);
  EXPECT_TRUE(std::isnan(c.bars[3].geomean));
  EXPECT_TRUE(std::isnan(c.bars[4].accepted_rate));
  EXPECT_EQ(c.bars[0].n, 2);
  // Not rows, or rows without their labels, make no bars.
  EXPECT_TRUE(campaign_chart(nlohmann::json::object()).bars.empty());
  EXPECT_TRUE(campaign_chart(nlohmann::json::array({1, "x", {{"backend", "b"}}})).bars.empty());
}

TEST(ServeCharts, CampaignSpeedupsSitOnOneScaleWithTheirIntervalsAndTheOneLine) {
  std::string svg = campaign_speedup_svg(campaign_chart(campaign_rows()));
  auto cy = [&](const std::string& s, const std::string& b) {
    return svg_attr(svg, "class=\"geomean\" data-subset=\"" + s + "\" data-backend=\"" + b + "\"", "cy");
  };
  auto cx = [&](const std::string& s, const std::string& b) {
    return svg_attr(svg, "class=\"geomean\" data-subset=\"" + s + "\" data-backend=\"" + b + "\"", "cx");
  };
  double y108 = cy("PC", "builtin"), y130 = cy("PC", "manual"), y090 = cy("PC+IA", "builtin");
  ASSERT_FALSE(std::isnan(y108) || std::isnan(y130) || std::isnan(y090)) << svg;
  // Higher is faster, and linear: the 1x line lies where the points' scale puts 1.0.
  EXPECT_LT(y130, y108);
  EXPECT_LT(y108, y090);
  double per_unit = (y090 - y130) / (1.3 - 0.9);
  double ref = svg_attr(svg, "class=\"reference\"", "y1");
  EXPECT_NEAR(ref, y130 + per_unit * (1.3 - 1.0), 0.05);
  EXPECT_NEAR(y108, y130 + per_unit * (1.3 - 1.08), 0.05);
  // Each interval spans its point.
  for (const auto& [s, b] : {std::pair{"PC", "builtin"}, std::pair{"PC", "manual"}, std::pair{"code-only", "manual"}}) {
    std::string sel = std::string("class=\"interval\" data-subset=\"") + s + "\" data-backend=\"" + b + "\"";
    double lo = svg_attr(svg, sel, "y1"), hi = svg_attr(svg, sel, "y2");
    EXPECT_LT(hi, cy(s, b)) << s << " " << b;
    EXPECT_GT(lo, cy(s, b)) << s << " " << b;
  }
  // Subsets along x in the table's order; within one, the backends side by side.
  EXPECT_LT(cx("PC", "manual"), cx("PC+IA", "builtin"));
  EXPECT_LT(cx("PC", "builtin"), cx("PC", "manual"));
  EXPECT_LT(cx("PC+IA", "builtin"), cx("code-only", "manual"));
  // A colour per backend, the same in the legend; the null speedup is a dash, not a point.
  EXPECT_NE(svg.find("data-backend=\"manual\" data-value=\"1.3\" cx=\"" ), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("data-subset=\"PC\" data-backend=\"manual\"[^>]*fill=\"(#[0-9a-f]+)\"")));
  EXPECT_EQ(m[1], backend_colour(1));
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("data-subset=\"PC\" data-backend=\"builtin\"[^>]*fill=\"(#[0-9a-f]+)\"")));
  EXPECT_EQ(m[1], backend_colour(0));
  EXPECT_NE(backend_colour(0), backend_colour(1));
  EXPECT_NE(svg.find("fill=\"" + backend_colour(1) + "\"/><text class=\"legend\" x=\""), std::string::npos);
  EXPECT_EQ(svg.find("data-subset=\"code-only\" data-backend=\"builtin\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"none\""), std::string::npos);
  EXPECT_NE(svg.find(">code-only</text>"), std::string::npos);
}

TEST(ServeCharts, CampaignRatesAreBarsOfTheirShareAndNullsAreDashes) {
  std::string svg = campaign_rates_svg(campaign_chart(campaign_rows()));
  auto height = [&](const char* kind, const std::string& s, const std::string& b) {
    return svg_attr(svg, std::string("class=\"rate\" data-kind=\"") + kind + "\" data-subset=\"" + s +
                             "\" data-backend=\"" + b + "\"",
                    "height");
  };
  double full = height("valid_edit", "PC", "manual");
  ASSERT_GT(full, 0) << svg;
  EXPECT_NEAR(height("valid_edit", "PC", "builtin"), full / 2, 0.05);
  EXPECT_NEAR(height("valid_edit", "code-only", "manual"), full / 4, 0.05);
  EXPECT_NEAR(height("accepted", "PC", "manual"), full, 0.05);
  EXPECT_NEAR(height("accepted", "PC+IA", "builtin"), 0, 0.05);
  EXPECT_TRUE(std::isnan(height("accepted", "code-only", "manual")));
  EXPECT_TRUE(std::isnan(height("valid_edit", "code-only", "builtin")));
  EXPECT_NE(svg.find("class=\"none\""), std::string::npos);
}

TEST(ServeCharts, CampaignLabelsAreEscaped) {
  nlohmann::json rows = nlohmann::json::array(
      {campaign_row("<script>alert(1)</script>", "a\"b<img>", 1.2, 1.1, 1.3, 0.5, 0.5)});
  for (const std::string& svg : {campaign_speedup_svg(campaign_chart(rows)), campaign_rates_svg(campaign_chart(rows))}) {
    EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("<img"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("a\"b"), std::string::npos) << svg;
    EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  }
}
