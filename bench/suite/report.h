// The results of `pax-ocl bench`: tables of measurements, each written as CSV, all of them with
// the machine's description in one JSON file, plotted with gnuplot (PNG), and linked from a
// markdown summary. A table's rows are JSON values (numbers or strings), one per column.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paxocl::bench {

// How a table is drawn: `y` against `x`, one line per distinct value of `series` (if any).
struct Plot {
  std::string x, y, series;
  bool log_x = true;
  std::string y_label;
  std::optional<double> reference;  // a horizontal line (e.g. the measured peak)
  std::string reference_label;
  std::string only_column, only_value;  // if set: plot only the rows with this value in this column
};

inline Plot plot_of(std::string x, std::string y, std::string series) {
  Plot p;
  p.x = std::move(x);
  p.y = std::move(y);
  p.series = std::move(series);
  return p;
}

struct Table {
  std::string name;   // file stem: gemm, memory, ...
  std::string title;  // one line for the summary
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
  std::optional<Plot> plot;
  std::vector<std::string> key;  // columns identifying a row across runs (for compare)

  void add(std::vector<nlohmann::json> row) { rows.push_back(std::move(row)); }
  nlohmann::json to_json() const;
  static Table from_json(const nlohmann::json& j);
};

struct Report {
  nlohmann::json machine;  // devices, drivers, host topology, pax-ocl version, time
  std::vector<Table> tables;

  // dir/<table>.csv, dir/results.json, dir/<table>.png (when gnuplot is installed), dir/summary.md.
  // Returns the files written.
  std::vector<std::filesystem::path> write(const std::filesystem::path& dir) const;
  static Report load(const std::filesystem::path& results_json);  // DataError if unreadable
};

}  // namespace paxocl::bench
