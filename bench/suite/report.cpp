#include "bench/suite/report.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "common/regular_file.h"

namespace paxocl::bench {

namespace fs = std::filesystem;
using nlohmann::json;

json Table::to_json() const {
  json j{{"name", name}, {"title", title}, {"columns", columns}, {"rows", rows}, {"key", key}};
  if (plot) {
    j["plot"] = {{"x", plot->x}, {"y", plot->y}, {"series", plot->series}, {"log_x", plot->log_x},
                 {"y_label", plot->y_label}, {"reference_label", plot->reference_label}};
    if (plot->reference) j["plot"]["reference"] = *plot->reference;
  }
  return j;
}

Table Table::from_json(const json& j) {
  Table t;
  t.name = j.at("name").get<std::string>();
  t.title = j.value("title", "");
  t.columns = j.at("columns").get<std::vector<std::string>>();
  t.rows = j.at("rows").get<std::vector<std::vector<json>>>();
  t.key = j.value("key", std::vector<std::string>{});
  return t;
}

namespace {
std::string cell(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    return s.find_first_of(",\"") == std::string::npos ? s : "\"" + s + "\"";
  }
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  return v.dump();
}

// A value as plain text (plot labels; no CSV quoting).
std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : cell(v); }

std::size_t column(const Table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i] == name) return i;
  }
  throw std::logic_error(fmt::format("table {} has no column {}", t.name, name));
}

// A gnuplot script drawing the table's plot from per-series data files; false without gnuplot.
bool plot_png(const Table& t, const fs::path& dir) {
  if (!t.plot || t.rows.empty()) return false;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return false;
  const Plot& p = *t.plot;
  const std::size_t x = column(t, p.x), y = column(t, p.y);
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  for (const auto& row : t.rows) {
    if (!row[x].is_number() || !row[y].is_number()) continue;
    if (!p.only_column.empty() && text_of(row[column(t, p.only_column)]) != p.only_value) continue;
    const std::string s = p.series.empty() ? p.y : text_of(row[column(t, p.series)]);
    series[s].emplace_back(row[x].get<double>(), row[y].get<double>());
  }
  const fs::path data_dir = dir / ".plot-data";
  fs::create_directories(data_dir);
  std::string plots;
  int i = 0;
  for (const auto& [name, points] : series) {
    const fs::path data = data_dir / fmt::format("{}-{}.dat", t.name, i++);
    std::ofstream out(data);
    for (const auto& [px, py] : points) out << px << " " << py << "\n";
    plots += fmt::format("{}'{}' using 1:2 with linespoints title '{}'", plots.empty() ? "" : ", ", data.string(), name);
  }
  if (p.reference) plots += fmt::format(", {} with lines dashtype 2 title '{}'", *p.reference, p.reference_label);
  const fs::path script = data_dir / (t.name + ".gp");
  std::ofstream(script) << fmt::format(
      "set terminal pngcairo size 900,540 noenhanced\nset output '{}'\nset title '{}'\nset xlabel '{}'\n"
      "set ylabel '{}'\nset grid\nset key left top\n{}plot {}\n",
      (dir / (t.name + ".png")).string(), t.title, p.x, p.y_label.empty() ? p.y : p.y_label,
      p.log_x ? "set logscale x 2\n" : "", plots);
  const bool ok = std::system(fmt::format("gnuplot '{}' 2>/dev/null", script.string()).c_str()) == 0;
  if (!ok) spdlog::warn("gnuplot failed on {}", script.string());
  return ok;
}
}  // namespace

std::vector<fs::path> Report::write(const fs::path& dir) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("--output={}: cannot create it ({})", dir.string(), ec.message()));
  std::vector<fs::path> written;
  json all{{"machine", machine}, {"tables", json::array()}};
  std::string summary = fmt::format("# pax-ocl bench\n\n{}\n\n", machine.value("summary", ""));
  bool any_plot = false;
  for (const Table& t : tables) {
    const fs::path csv = dir / (t.name + ".csv");
    std::ofstream out(csv);
    for (std::size_t c = 0; c < t.columns.size(); ++c) out << (c ? "," : "") << t.columns[c];
    out << "\n";
    for (const auto& row : t.rows) {
      for (std::size_t c = 0; c < row.size(); ++c) out << (c ? "," : "") << cell(row[c]);
      out << "\n";
    }
    written.push_back(csv);
    all["tables"].push_back(t.to_json());
    summary += fmt::format("## {}\n\n{} rows: [{}.csv]({}.csv)\n\n", t.title, t.rows.size(), t.name, t.name);
    if (plot_png(t, dir)) {
      written.push_back(dir / (t.name + ".png"));
      summary += fmt::format("![{}]({}.png)\n\n", t.title, t.name);
      any_plot = true;
    }
  }
  if (!any_plot && !tables.empty()) summary += "(no plots: install gnuplot for PNGs)\n";
  std::ofstream(dir / "results.json") << all.dump(1) << "\n";
  std::ofstream(dir / "summary.md") << summary;
  written.push_back(dir / "results.json");
  written.push_back(dir / "summary.md");
  fs::remove_all(dir / ".plot-data", ec);
  return written;
}

Report Report::load(const fs::path& file) {
  if (const std::string why = why_not_regular_file(file); !why.empty()) {  // a FIFO would block the open below
    throw DataError(fmt::format("{}: cannot be read ({}); give a results.json written by `pax-ocl bench`", file.string(), why));
  }
  std::ifstream in(file);
  if (!in) throw DataError(fmt::format("{}: cannot be read; give a results.json written by `pax-ocl bench`", file.string()));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw DataError(fmt::format("{}: not JSON ({})", file.string(), e.what()));
  }
  Report r;
  r.machine = j.value("machine", json::object());
  for (const auto& t : j.at("tables")) r.tables.push_back(Table::from_json(t));
  return r;
}

}  // namespace paxocl::bench
