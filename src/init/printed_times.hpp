// The times a program prints about itself, found two ways: in its sources (printf formats such
// as "kernel_time_ms: %.4f\n"), and in what a run printed ("Average SpMV kernel time: 41.2 us").
// Each becomes a run.kernel_time pattern; init/init.cpp keeps the one closest to the traced
// kernel time, or, with no trace, the one whose words say it is a kernel's time.
#pragma once

#include <string>
#include <vector>

namespace optimas::init {

struct PrintedTime {
  std::string pattern;      // regex for run.kernel_time: the line's text up to the figure, group 1, the unit
  std::string unit;         // ms, us, ns or s; empty when neither the label nor a suffix says
  bool average = false;     // the words say average, mean or per call/iteration
  bool kernel_word = false; // the label says kernel or GPU
  std::string label;        // the words before the figure, as printed
  double value = 0;         // from a run: the figure as printed (in `unit`)
  std::string where;        // from sources: "main.cu:211"
};

// Milliseconds per unit: ms 1, us 1e-3, ns 1e-6, s 1e3; 0 for an unknown unit.
double unit_ms(const std::string& unit);

// The printf formats of `text` (a source file named `file`) that print a floating-point figure
// labelled as a time or with a time unit.
std::vector<PrintedTime> printed_times_in_source(const std::string& file, const std::string& text);

// The lines of a run's stdout that hold a figure with a time unit (after it, or in the label:
// "time (ms): 3.2", "elapsed_us=12"); one per line, the first such figure.
std::vector<PrintedTime> printed_times_in_output(const std::string& stdout_text);

// The line's shape as a regex: literal text, every number replaced by a number pattern, anchored
// at the start; what validate.ignore gets for a line that varies from run to run.
std::string line_shape(const std::string& line);

// Whether a line reads as a time, rate or bandwidth (such a line changes with every faster
// variant, so it can never be part of the compared output).
bool looks_like_timing(const std::string& line);

} // namespace optimas::init
