#include "src/report/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "eval/model/subgraph_structure.h"
#include "src/report/dag_layout.h"
#include "src/io/text_format.h"

namespace annealer {
namespace {

// Drawing units of the DAG: one layer and one slot apart, node size.
constexpr double kLayerGap = 120;
constexpr double kSlotGap = 34;
constexpr double kNodeWidth = 74;
constexpr double kNodeHeight = 22;
// The charts are drawn in a 1000-wide coordinate system and stretched to the page width.
constexpr double kChartWidth = 1000;

std::string Num(double value, int decimals = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string PercentText1(double percent) { return PercentText(percent, 1); }

// A distinct colour per subgraph: hues a golden angle apart.
std::string SubgraphFill(int index) {
  return "hsl(" + Num(std::fmod(index * 137.508, 360.0), 0) + ",70%,74%)";
}
std::string SubgraphStroke(int index) {
  return "hsl(" + Num(std::fmod(index * 137.508, 360.0), 0) + ",55%,38%)";
}

// A few round values spanning [lo, hi] for axis ticks.
std::vector<double> Ticks(double lo, double hi, int wanted) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / wanted;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

constexpr const char* kStyle = R"CSS(
:root{--ink:#1d2330;--muted:#5c6577;--line:#d8dce4;--mem:#e8913a;--cmp:#4a7fd4;--bad:#c62828}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);margin:0;background:#f5f6f9}
main{max-width:1500px;margin:0 auto;padding:16px 22px 40px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 14px;margin:12px 0}
.meta{color:var(--muted)}
.figures{display:flex;flex-wrap:wrap;gap:10px;margin-top:10px}
.figure{border:1px solid var(--line);border-radius:6px;padding:6px 12px;min-width:150px}
.figure b{display:block;font-size:20px}.figure>span{color:var(--muted);font-size:12px}
.ok{color:#1b7f3b}.bad{color:var(--bad)}
.banner{background:#fdecea;border:1px solid #f5c2c0;color:#8a1c1c;border-radius:6px;padding:8px 12px;margin-top:10px}
.note{background:#fff8e1;border:1px solid #f1e0a6;border-radius:6px;padding:6px 12px;margin-top:8px}
.hint{color:var(--muted);font-size:12px;margin-left:8px;font-weight:normal}
svg{display:block;width:100%;background:#fff;user-select:none}
svg.zoom{border:1px solid var(--line);border-radius:4px;cursor:grab}
svg text{font-size:11px;fill:var(--ink)}
svg.far .op text,svg.far .sgn text{display:none}
.op rect,.sgn rect{stroke-width:1.2}
.op.hl rect,.sgn.hl rect{stroke:#000;stroke-width:3}
svg.focus .op:not(.hl),svg.focus .sgn:not(.hl){opacity:.22}
svg.focus .edge{opacity:.25}
.edge{fill:none}
.bar{cursor:pointer}
.bar.hl rect.body{stroke:#000;stroke-width:2;vector-effect:non-scaling-stroke}
.bar.hl rect.ws{stroke:#000;stroke-width:2;vector-effect:non-scaling-stroke}
svg.focus .bar:not(.hl){opacity:.35}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:11px;padding:0 2px}
.legend{display:flex;flex-wrap:wrap;gap:14px;color:var(--muted);font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
.tablewrap{max-height:560px;overflow:auto;border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{padding:3px 8px;border-bottom:1px solid #eef0f4;text-align:right;white-space:nowrap}
th{position:sticky;top:0;background:#f0f2f6;z-index:1}
td.l,th.l{text-align:left;white-space:normal}
tr.sg{cursor:pointer}tr.sg:hover{background:#f6f8fc}
tr.sg.hl{background:#fff3c4}
tr.sg.broken{background:#fdecea}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
#script-errors{white-space:pre-wrap}
button{font:inherit;font-size:12px;padding:1px 8px;margin-left:6px}
)CSS";

// Installed first, so that any later script error is caught and shown.
constexpr const char* kErrorScript = R"JS(
window.addEventListener('error', function (e) {
  var message = (e && e.message) ? e.message : String(e);
  document.documentElement.setAttribute('data-script-error', message);
  var box = document.getElementById('script-errors');
  if (box) { box.hidden = false; box.textContent += 'script error: ' + message + '\n'; }
});
)JS";

constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  var root = document.documentElement;
  // Every element of subgraph i carries data-sg (several ids for an op that is recomputed).
  var members = {};
  document.querySelectorAll('[data-sg]').forEach(function (el) {
    el.getAttribute('data-sg').split(' ').forEach(function (id) {
      (members[id] = members[id] || []).push(el);
    });
  });
  var focusables = document.querySelectorAll('svg.focusable');
  var shown = null, pinned = null;
  function show(id) {
    if (shown === id) return;
    if (shown !== null) (members[shown] || []).forEach(function (el) { el.classList.remove('hl'); });
    shown = id;
    if (id !== null) (members[id] || []).forEach(function (el) { el.classList.add('hl'); });
    focusables.forEach(function (svg) { svg.classList.toggle('focus', id !== null); });
  }
  function firstId(el) {
    var owner = el.closest('[data-sg]');
    return owner ? owner.getAttribute('data-sg').split(' ')[0] : null;
  }
  document.addEventListener('mouseover', function (e) {
    var id = firstId(e.target);
    show(id !== null ? id : pinned);
  });
  document.addEventListener('click', function (e) {
    if (e.target.closest('button')) return;
    var id = firstId(e.target);
    if (id === null) { if (!e.target.closest('svg.zoom')) { pinned = null; show(null); } return; }
    pinned = (pinned === id) ? null : id;
    show(pinned);
    if (pinned === null) return;
    var row = document.getElementById('sg-' + id);
    if (row && !e.target.closest('tr')) row.scrollIntoView({block: 'nearest'});
    if (e.target.closest('tr')) zoomDagTo(id);
  });

  // Zoom (wheel) and pan (drag) by rewriting the viewBox; double click restores the view.
  // data-zoom="x": horizontal only (the charts, drawn with preserveAspectRatio="none").
  var views = [];
  function Zoom(svg) {
    var b = svg.viewBox.baseVal;
    this.svg = svg; this.home = [b.x, b.y, b.width, b.height]; this.v = this.home.slice();
    this.xOnly = svg.getAttribute('data-zoom') === 'x';
    var self = this, drag = null;
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var p = self.point(e), f = e.deltaY < 0 ? 1 / 1.25 : 1.25, v = self.v;
      var w = Math.min(v[2] * f, self.home[2] * 4);
      f = w / v[2];
      self.v = [p.x - (p.x - v[0]) * f, self.xOnly ? v[1] : p.y - (p.y - v[1]) * f,
                v[2] * f, self.xOnly ? v[3] : v[3] * f];
      self.apply();
    }, {passive: false});
    svg.addEventListener('mousedown', function (e) {
      drag = {x: e.clientX, y: e.clientY, v: self.v.slice(), s: self.scale(), moved: false};
      svg.style.cursor = 'grabbing';
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      self.v = [drag.v[0] - dx / drag.s.x, self.xOnly ? drag.v[1] : drag.v[1] - dy / drag.s.y,
                drag.v[2], drag.v[3]];
      self.apply();
    });
    window.addEventListener('mouseup', function () { drag = null; svg.style.cursor = ''; });
    svg.addEventListener('dblclick', function () { self.reset(); });
    // A large graph fitted whole is too small to read: open it at a readable scale instead, on
    // its left (first) end and centred vertically.
    var open = parseFloat(svg.getAttribute('data-open-scale'));
    var fit = this.scale().x;
    if (open > 0 && fit > 0 && fit < open * 0.7) {
      var w = svg.clientWidth / open, h = svg.clientHeight / open;
      this.v = [this.home[0], this.home[1] + this.home[3] / 2 - h / 2, w, h];
    }
    this.apply();
  }
  Zoom.prototype.point = function (e) {
    var p = this.svg.createSVGPoint(); p.x = e.clientX; p.y = e.clientY;
    return p.matrixTransform(this.svg.getScreenCTM().inverse());
  };
  Zoom.prototype.scale = function () {
    var m = this.svg.getScreenCTM();
    return {x: m ? m.a : 1, y: m ? m.d : 1};
  };
  Zoom.prototype.reset = function () { this.v = this.home.slice(); this.apply(); };
  Zoom.prototype.apply = function () {
    this.svg.setAttribute('viewBox', this.v.join(' '));
    this.svg.classList.toggle('far', this.scale().x < 0.55);
    var axis = document.getElementById(this.svg.id + '-axis');
    if (axis) drawAxis(axis, this.v[0] / this.home[2], (this.v[0] + this.v[2]) / this.home[2]);
  };
  // The HTML axis under a horizontally zoomable chart: five labels across the visible part.
  function drawAxis(axis, from, to) {
    var full = parseFloat(axis.getAttribute('data-full')), unit = axis.getAttribute('data-unit') || '';
    var html = '';
    for (var i = 0; i <= 4; ++i) {
      var value = (from + (to - from) * i / 4) * full;
      if (axis.hasAttribute('data-int')) value = Math.round(value);
      html += '<span>' + fmt(value) + unit + '</span>';
    }
    axis.innerHTML = html;
  }
  function fmt(x) {
    var a = Math.abs(x);
    if (a >= 1e9) return (x / 1e9).toFixed(a >= 1e10 ? 0 : 1) + 'G';
    if (a >= 1e6) return (x / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
    if (a >= 1e3) return (x / 1e3).toFixed(a >= 1e4 ? 0 : 1) + 'k';
    return (Math.round(x * 10) / 10).toString();
  }
  document.querySelectorAll('svg.zoom').forEach(function (svg) {
    var z = new Zoom(svg); views.push(z); svg.zoomView = z;
  });
  document.querySelectorAll('button[data-reset]').forEach(function (b) {
    b.addEventListener('click', function () {
      var svg = document.getElementById(b.getAttribute('data-reset'));
      if (svg && svg.zoomView) svg.zoomView.reset();
    });
  });
  // The DAG's two views: its ops, or one node per subgraph.
  document.querySelectorAll('button[data-swap]').forEach(function (b) {
    b.addEventListener('click', function () {
      var ops = document.getElementById('dag-view'), sgs = document.getElementById('dag-sg-view');
      var collapsed = ops.hidden;
      ops.hidden = !collapsed; sgs.hidden = collapsed;
      document.getElementById('dag-sg-legend').hidden = collapsed;
      b.textContent = collapsed ? 'one node per subgraph' : 'one node per op';
      document.getElementById(collapsed ? 'dag' : 'dag-sg').zoomView.reset();
      var reset = document.querySelector('button[data-reset="dag"], button[data-reset="dag-sg"]');
      if (reset) reset.setAttribute('data-reset', collapsed ? 'dag' : 'dag-sg');
    });
  });
  // Clicking a table row brings the subgraph's ops into view in the DAG.
  function zoomDagTo(id) {
    var svg = document.getElementById('dag');
    if (!svg || !svg.zoomView) return;
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    (members[id] || []).forEach(function (el) {
      if (!el.classList.contains('op')) return;
      var b = el.getBBox();
      x0 = Math.min(x0, b.x); y0 = Math.min(y0, b.y);
      x1 = Math.max(x1, b.x + b.width); y1 = Math.max(y1, b.y + b.height);
    });
    if (!(x1 > x0)) return;
    var z = svg.zoomView, aspect = z.home[3] / z.home[2];
    var w = Math.max(x1 - x0 + 240, 600), h = Math.max(y1 - y0 + 120, w * aspect);
    w = Math.max(w, h / aspect);
    z.v = [(x0 + x1) / 2 - w / 2, (y0 + y1) / 2 - h / 2, w, h];
    z.apply();
  }
  if (!root.hasAttribute('data-script-error')) root.setAttribute('data-render-ok', '1');
})();
)JS";

class Report {
 public:
  explicit Report(const ReportInput& in) : in_(in), problem_(in.problem), summary_(in.summary) {
    // Labels count only when they fit the problem (the CLI checks the map file's counts).
    if (in_.labels != nullptr && in_.labels->ops.size() == problem_.ops.size()) {
      op_labels_ = &in_.labels->ops;
    }
    if (in_.labels != nullptr && in_.labels->tensors.size() == problem_.tensors.size()) {
      tensor_labels_ = &in_.labels->tensors;
    }
    op_subgraphs_.resize(problem_.ops.size());
    for (int i = 0; i < static_cast<int>(in_.schedule.subgraphs.size()); ++i) {
      for (OpId op : in_.schedule.subgraphs[i].ops) {
        if (op >= 0 && op < static_cast<OpId>(problem_.ops.size())) op_subgraphs_[op].push_back(i);
      }
    }
  }

  std::string Build() {
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out += "<title>annealer report: " + HtmlEscape(in_.problem_name) + "</title>\n";
    out += "<style>" + std::string(kStyle) + "</style>\n";
    out += "<script>" + std::string(kErrorScript) + "</script>\n</head>\n<body>\n<main>\n";
    out += "<div id=\"script-errors\" class=\"banner\" hidden></div>\n";
    out += Header();
    out += Dag();
    out += Timeline();
    out += WorkingSet();
    if (in_.log != nullptr) out += Convergence();
    out += Table();
    out += "</main>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
    return out;
  }

 private:
  int NumSubgraphs() const { return static_cast<int>(summary_.subgraphs.size()); }

  // A list of ops or tensors in a tooltip: their ids ("3, 4, 5"), or with labels runs of them
  // ("3–5 conv1 (Conv, conv-tap), 6 relu (Relu, elementwise)"), at most kTitleRuns.
  static constexpr size_t kTitleRuns = 12;
  static std::string IdsTitle(const std::vector<int32_t>& ids,
                              const std::vector<ItemLabel>* labels) {
    return labels ? HtmlEscape(RunsText(ids, *labels, kTitleRuns)) : JoinIds(ids, ", ");
  }
  // The same list in a table cell: every run, a cut name whole in its tooltip.
  static std::string IdsCell(const std::vector<int32_t>& ids,
                             const std::vector<ItemLabel>* labels) {
    if (!labels) return JoinIds(ids, ", ");
    std::string out;
    for (const LabelledRun& run : LabelledRuns(ids, *labels)) {
      if (!out.empty()) out += ", ";
      const std::string text = HtmlEscape(RunText(run));
      if (run.label && LabelCut(*run.label, kLabelNameChars)) {
        out += "<span title=\"" + HtmlEscape(LabelText(*run.label)) + "\">" + text + "</span>";
      } else {
        out += text;
      }
    }
    return out;
  }
  // ": conv2d_3 (Conv, conv-tap)" after "op 12" in a tooltip; empty without labels.
  static std::string NameSuffix(int32_t id, const std::vector<ItemLabel>* labels) {
    if (!labels || id < 0 || id >= static_cast<int32_t>(labels->size())) return "";
    const std::string text = LabelText((*labels)[id]);
    return text.empty() ? "" : ": " + HtmlEscape(text);
  }

  std::string SgAttr(const std::vector<int>& ids) const {
    std::string out = " data-sg=\"";
    out += JoinIds(ids, " ");
    return out += "\"";
  }

  std::string Figure(const std::string& value, const std::string& label,
                     const std::string& extra = "") const {
    return "<div class=\"figure\"" + extra + "><b>" + value + "</b><span>" + label +
           "</span></div>";
  }

  std::string Header() const {
    int matmuls = 0, layouts = 0;
    for (const Op& op : problem_.ops) {
      matmuls += op.kind == OpKind::MatMul ? 1 : 0;
      layouts += op.kind == OpKind::Layout ? 1 : 0;
    }
    std::string out = "<section id=\"summary\">\n<h1>annealer report</h1>\n<div class=\"meta\">";
    out += "problem <b>" + HtmlEscape(in_.problem_name) + "</b>: " +
           std::to_string(problem_.ops.size()) + " ops (" + std::to_string(matmuls) + " MatMul, " +
           std::to_string(problem_.ops.size() - matmuls - layouts) + " Pointwise" +
           (layouts > 0 ? ", " + std::to_string(layouts) + " Layout" : std::string()) + "), " +
           std::to_string(problem_.tensors.size()) + " tensors, fast memory capacity " +
           Grouped(static_cast<double>(problem_.fast_memory_capacity)) +
           ", slow memory bandwidth " + Readable(problem_.slow_memory_bandwidth) +
           ", native tile " + std::to_string(problem_.native) + "<br>schedule <b>" +
           HtmlEscape(in_.schedule_name) + "</b>: " + std::to_string(NumSubgraphs()) +
           " subgraphs</div>\n<div class=\"figures\">\n";
    const bool valid = summary_.valid();
    int priced = 0;
    for (const SubgraphSummary& s : summary_.subgraphs) priced += s.report ? 1 : 0;
    out += Figure(valid ? "<span class=\"ok\">VALID</span>" : "<span class=\"bad\">INVALID</span>",
                  "verdict (oracle)", " id=\"verdict\"");
    out += Figure("<span id=\"total\">" + Grouped(summary_.total) + "</span>",
                  valid ? "total latency"
                        : "sum of the " + std::to_string(priced) + " of " +
                              std::to_string(NumSubgraphs()) + " subgraphs priced alone");
    out += Figure(Grouped(summary_.bound.total()), "lower bound");
    out += Figure(summary_.gap_percent ? PercentText1(*summary_.gap_percent) : "n/a",
                  "gap to the lower bound");
    int memory_bound = 0;
    for (const SubgraphSummary& s : summary_.subgraphs) memory_bound += s.memory_bound() ? 1 : 0;
    out += Figure(std::to_string(memory_bound) + " / " + std::to_string(priced),
                  "memory-bound subgraphs");
    out += "</div>\n";
    if (!valid) {
      const Violation& v = summary_.evaluation.violation;
      out += "<div class=\"banner\" id=\"violation\"><b>Broken rule " + HtmlEscape(v.rule) +
             "</b>" +
             (v.subgraph >= 0 ? " in subgraph " + std::to_string(v.subgraph) : std::string()) +
             ": " + HtmlEscape(v.detail) +
             "<br>The oracle stops at the first broken rule; below, every subgraph is priced on "
             "its own with the tensors its predecessor retains, where it can be.</div>\n";
    }
    if (!summary_.partial_edge_tiles.empty()) {
      out += "<div class=\"note\">" + HtmlEscape(PartialEdgeTilesNote(summary_.partial_edge_tiles)) +
             ".</div>\n";
    }
    for (const std::string& warning : summary_.evaluation.warnings) {
      out += "<div class=\"note\">warning: " + HtmlEscape(warning) + "</div>\n";
    }
    return out + "</section>\n";
  }

  // A node or an edge of a layered drawing, with how it looks.
  struct DrawnNode {
    std::string label, title, fill, stroke, attributes;  // attributes: data-sg=... etc.
    bool round = false;
    bool dashed = false;
  };
  struct DrawnEdge {
    int from = 0, to = 0;
    std::string style, title;
  };

  // One zoomable SVG of a DAG laid out in layers (src/report/dag_layout.h). Edges between the same
  // two nodes must come merged.
  static std::string LayeredSvg(const std::string& id, const std::vector<DrawnNode>& nodes,
                                const std::vector<DrawnEdge>& drawn_edges,
                                const char* node_class, bool hidden, int* layers) {
    std::vector<std::pair<int, int>> pairs;
    for (const DrawnEdge& e : drawn_edges) pairs.emplace_back(e.from, e.to);
    const DagLayout layout = LayoutDag(static_cast<int>(nodes.size()), pairs);
    *layers = layout.layers;
    const auto sx = [](double x) { return x * kLayerGap; };
    const auto sy = [](double y) { return y * kSlotGap; };
    const double x0 = -kNodeWidth, y0 = sy(layout.min_y) - kSlotGap;
    const double width = sx(std::max(0, layout.layers - 1)) + 2 * kNodeWidth;
    const double height = sy(layout.max_y - layout.min_y) + 2 * kSlotGap;
    // Tall enough to show a layer's nodes at a readable size; a wide graph opens at that size
    // on its left end (the script zooms in), "fit" shows it whole.
    const double pixels = std::clamp(height * 0.8 + 20, 200.0, 640.0);
    // The view is hidden through its wrapper: an SVG element has no `hidden`.
    std::string out = "<div id=\"" + id + "-view\"" + (hidden ? " hidden" : "") + ">\n<svg id=\"" +
                      id + "\" class=\"zoom focusable\" viewBox=\"" + Num(x0) +
                      " " + Num(y0) + " " + Num(width) + " " + Num(height) +
                      "\" preserveAspectRatio=\"xMidYMid meet\" data-open-scale=\"0.8\" "
                      "style=\"height:" + Num(pixels, 0) + "px\">\n<g class=\"edges\">\n";
    // LayoutDag keeps the input order of distinct edges, and the caller merged duplicates.
    for (size_t k = 0; k < layout.edges.size(); ++k) {
      const DagLayout::Edge& e = layout.edges[k];
      const DrawnEdge& drawn = drawn_edges[k];
      std::string d;
      for (size_t i = 0; i < e.points.size(); ++i) {
        d += (i == 0 ? "M" : " L") + Num(sx(e.points[i].x)) + " " + Num(sy(e.points[i].y));
      }
      out += "<path class=\"edge\" d=\"" + d + "\" " + drawn.style + "><title>" + drawn.title +
             "</title></path>\n";
    }
    out += "</g>\n<g class=\"ops\">\n";
    for (size_t v = 0; v < nodes.size(); ++v) {
      const DrawnNode& n = nodes[v];
      const double cx = sx(layout.position[v].x), cy = sy(layout.position[v].y);
      out += "<g class=\"" + std::string(node_class) + "\"" + n.attributes + "><rect x=\"" + Num(cx - kNodeWidth / 2) +
             "\" y=\"" + Num(cy - kNodeHeight / 2) + "\" width=\"" + Num(kNodeWidth) +
             "\" height=\"" + Num(kNodeHeight) + "\" rx=\"" + (n.round ? "11" : "2") +
             "\" fill=\"" + n.fill + "\" stroke=\"" + n.stroke + "\"" +
             (n.dashed ? " stroke-dasharray=\"4 2\"" : "") + "/><text x=\"" + Num(cx) +
             "\" y=\"" + Num(cy + 4) + "\" text-anchor=\"middle\">" + n.label +
             "</text><title>" + n.title + "</title></g>\n";
    }
    return out + "</g>\n</svg>\n</div>\n";
  }

  // The text in a labelled op's box: its id and first op type ("12 Conv"), cut to fit the box.
  static std::string NodeText(OpId op, const ItemLabel& label) {
    const std::string id = std::to_string(op);
    const size_t room = id.size() < 8 ? 11 - id.size() : 3;
    std::string type = label.detail.substr(0, label.detail.find_first_of(",/"));
    if (type.empty()) return HtmlEscape(id + " " + LabelText({label.name, ""}, room));
    if (type.size() > room) type = type.substr(0, room - 1) + "\u2026";  // op types are ASCII
    return HtmlEscape(id + " " + type);
  }

  static std::string EdgeStyle(bool retained, bool inside, int subgraph) {
    if (retained) return "stroke=\"#2a9d3a\" stroke-width=\"2\" stroke-dasharray=\"6 3\"";
    if (inside) return "stroke=\"" + SubgraphStroke(subgraph) + "\" stroke-width=\"2\"";
    return "stroke=\"#a3a9b5\" stroke-width=\"1\"";
  }

  std::string Dag() const {
    const int num_ops = static_cast<int>(problem_.ops.size());
    // (tensor, consumer's subgraph) pairs carried by retention from the subgraph before.
    std::set<std::pair<TensorId, int>> retained_links;
    for (int i = 0; i + 1 < NumSubgraphs(); ++i) {
      for (TensorId t : summary_.subgraphs[i].subgraph->retain) retained_links.emplace(t, i + 1);
    }

    std::vector<DrawnNode> op_nodes(num_ops);
    for (OpId op = 0; op < num_ops; ++op) {
      const Op& o = problem_.ops[op];
      const Tensor& t = problem_.tensors[o.output];
      const std::vector<int>& sgs = op_subgraphs_[op];
      const bool matmul = o.kind == OpKind::MatMul;
      std::string sg_text = "in no subgraph";
      if (!sgs.empty()) sg_text = (sgs.size() == 1 ? "subgraph " : "subgraphs ") + JoinIds(sgs, ", ");
      DrawnNode& n = op_nodes[op];
      const bool layout = o.kind == OpKind::Layout;
      n.label = (matmul ? "MM " : layout ? "LY " : "PW ") + std::to_string(op);
      if (op_labels_) n.label = NodeText(op, (*op_labels_)[op]);
      n.title = "op " + std::to_string(op) + " (" + (matmul ? "MatMul" : layout ? "Layout" : "Pointwise") + ")" +
                NameSuffix(op, op_labels_) + ", output tensor " + std::to_string(o.output) +
                " (" + std::to_string(t.height) + "\u00d7" + std::to_string(t.width) + ")" +
                NameSuffix(o.output, tensor_labels_) + ", base cost " + Readable(o.base_cost) +
                "; " + sg_text;
      n.fill = sgs.empty() ? "#eee" : SubgraphFill(sgs.front());
      n.stroke = sgs.empty() ? "#c62828" : SubgraphStroke(sgs.front());
      n.attributes = sgs.empty() ? "" : SgAttr(sgs);
      n.round = !matmul;
      n.dashed = sgs.size() > 1;
    }
    std::vector<DrawnEdge> op_edges;
    std::set<std::pair<int, int>> seen;
    for (OpId op = 0; op < num_ops; ++op) {
      for (TensorId t : problem_.ops[op].inputs) {
        const OpId p = problem_.producer[t];
        if (p == kNoOp || !seen.emplace(p, op).second) continue;
        bool inside = false, retained = false;
        for (int a : op_subgraphs_[p]) {
          for (int b : op_subgraphs_[op]) inside = inside || a == b;
        }
        for (int b : op_subgraphs_[op]) retained = retained || retained_links.count({t, b}) > 0;
        op_edges.push_back({p, op,
                            EdgeStyle(retained, inside,
                                      op_subgraphs_[p].empty() ? 0 : op_subgraphs_[p].front()),
                            "tensor " + std::to_string(t) + NameSuffix(t, tensor_labels_) +
                                (tensor_labels_ ? "; op " : ": op ") + std::to_string(p) +
                                " \u2192 op " + std::to_string(op) +
                                (retained ? " (retained)" : "")});
      }
    }

    // The collapsed view: one node per subgraph; an edge where a subgraph reads a tensor the
    // latest earlier subgraph computing its producer made.
    std::vector<DrawnNode> sg_nodes(NumSubgraphs());
    std::map<std::pair<int, int>, std::pair<std::vector<int32_t>, bool>> flows;  // tensors, retained
    std::vector<int> last_computing(num_ops, -1);
    for (int i = 0; i < NumSubgraphs(); ++i) {
      const SubgraphSummary& s = summary_.subgraphs[i];
      const std::vector<OpId>& ops = s.subgraph->ops;
      DrawnNode& n = sg_nodes[i];
      n.label = "#" + std::to_string(i) + " \u00b7 " + std::to_string(ops.size()) +
                (ops.size() == 1 ? " op" : " ops");
      n.title = "subgraph " + std::to_string(i) + ": ops " + IdsTitle(ops, op_labels_) +
                (s.report ? ", latency " + Grouped(s.report->latency) : std::string(", not priced"));
      n.fill = SubgraphFill(i);
      n.stroke = s.report ? SubgraphStroke(i) : "#c62828";
      n.attributes = SgAttr({i});
      n.round = s.memory_bound();
      std::set<OpId> inside(ops.begin(), ops.end());
      for (OpId op : ops) {
        if (op < 0 || op >= num_ops) continue;
        for (TensorId t : problem_.ops[op].inputs) {
          const OpId p = problem_.producer[t];
          if (p == kNoOp || inside.count(p) || last_computing[p] < 0) continue;
          auto& flow = flows[{last_computing[p], i}];
          if (std::find(flow.first.begin(), flow.first.end(), t) == flow.first.end()) {
            flow.first.push_back(t);
          }
          flow.second = flow.second || retained_links.count({t, i}) > 0;
        }
      }
      for (OpId op : ops) {
        if (op >= 0 && op < num_ops) last_computing[op] = i;
      }
    }
    std::vector<DrawnEdge> sg_edges;
    for (const auto& [pair, flow] : flows) {
      sg_edges.push_back({pair.first, pair.second, EdgeStyle(flow.second, false, 0),
                          "subgraph " + std::to_string(pair.first) + " \u2192 " +
                              std::to_string(pair.second) + ": tensor" +
                              (flow.first.size() > 1 ? "s " : " ") +
                              IdsTitle(flow.first, tensor_labels_) +
                              (flow.second ? " (retained)" : "")});
    }

    int op_layers = 0, sg_layers = 0;
    const std::string ops_svg = LayeredSvg("dag", op_nodes, op_edges, "op", false, &op_layers);
    const std::string sg_svg = LayeredSvg("dag-sg", sg_nodes, sg_edges, "sgn", true, &sg_layers);
    std::string out = "<section id=\"dag-section\">\n<h2>DAG <span class=\"hint\">" +
                      std::to_string(num_ops) + " ops in " + std::to_string(op_layers) +
                      " layers, coloured by subgraph; MatMul square, Pointwise round; green "
                      "dashes: retained tensors. Wheel: zoom, drag: pan, double click: fit"
                      "</span><button data-reset=\"dag\">fit</button><button data-swap=\"dag\">"
                      "one node per subgraph</button></h2>\n";
    out += "<div class=\"legend\" id=\"dag-sg-legend\" hidden>" +
           std::to_string(NumSubgraphs()) + " subgraphs in " + std::to_string(sg_layers) +
           " layers; round: memory-bound, square: compute-bound; an edge carries the tensors "
           "one subgraph reads from another</div>\n";
    return out + ops_svg + sg_svg + "</section>\n";
  }

  std::string Timeline() const {
    const double total = summary_.total;
    const auto x = [&](double t) { return total > 0 ? t / total * kChartWidth : 0.0; };
    std::string out = "<section id=\"timeline-section\">\n<h2>Timeline <span class=\"hint\">one "
                      "bar per subgraph in execution order, length \u221d latency; wheel: zoom, "
                      "drag: pan</span><button data-reset=\"timeline\">fit</button></h2>\n";
    out += "<div class=\"legend\"><span><i style=\"background:var(--cmp)\"></i>compute-bound"
           "</span><span><i style=\"background:var(--mem)\"></i>memory-bound</span><span>upper "
           "stripe: compute time, lower stripe: memory time (share of the bar)</span><span><i "
           "style=\"background:#2a9d3a\"></i>arc: tensors retained for the next subgraph</span>"
           "<span><i style=\"background:var(--bad)\"></i>not priced (breaks a rule)</span></div>\n";
    out += "<svg id=\"timeline\" class=\"zoom focusable\" data-zoom=\"x\" viewBox=\"0 0 " +
           Num(kChartWidth, 0) + " 110\" preserveAspectRatio=\"none\" style=\"height:140px\">\n";
    for (int i = 0; i < NumSubgraphs(); ++i) {
      const SubgraphSummary& s = summary_.subgraphs[i];
      if (!s.report) {
        out += "<g class=\"bar\"" + SgAttr({i}) + "><line x1=\"" + Num(x(s.start), 3) +
               "\" x2=\"" + Num(x(s.start), 3) + "\" y1=\"30\" y2=\"100\" stroke=\"#c62828\" "
               "stroke-width=\"3\" vector-effect=\"non-scaling-stroke\"/><title>subgraph " +
               std::to_string(i) + " not priced: " + HtmlEscape(s.violation->Message()) +
               "</title></g>\n";
        continue;
      }
      const SubgraphReport& r = *s.report;
      const double bx = x(s.start), bw = x(r.latency);
      const double compute_share = r.latency > 0 ? std::min(1.0, r.compute_time / r.latency) : 0;
      const double memory_share = r.latency > 0 ? std::min(1.0, r.memory_time / r.latency) : 0;
      out += "<g class=\"bar\"" + SgAttr({i}) + "><rect class=\"body\" x=\"" + Num(bx, 3) +
             "\" y=\"40\" width=\"" + Num(bw, 3) + "\" height=\"60\" fill=\"" +
             (s.memory_bound() ? "var(--mem)" : "var(--cmp)") +
             "\" fill-opacity=\"0.55\" stroke=\"#fff\" stroke-width=\"0.6\" "
             "vector-effect=\"non-scaling-stroke\"/><rect x=\"" + Num(bx, 3) +
             "\" y=\"43\" width=\"" + Num(bw * compute_share, 3) +
             "\" height=\"8\" fill=\"var(--cmp)\"/><rect x=\"" + Num(bx, 3) +
             "\" y=\"89\" width=\"" + Num(bw * memory_share, 3) +
             "\" height=\"8\" fill=\"var(--mem)\"/><title>subgraph " + std::to_string(i) +
             " (ops " + IdsTitle(s.subgraph->ops, op_labels_) + "): latency " + Grouped(r.latency) +
             " (" + PercentText1(total > 0 ? r.latency / total * 100 : 0) + "), compute " +
             Grouped(r.compute_time) + ", memory " + Grouped(r.memory_time) + ", " +
             (s.memory_bound() ? "memory" : "compute") + "-bound</title></g>\n";
    }
    for (int i = 0; i + 1 < NumSubgraphs(); ++i) {
      const SubgraphSummary& a = summary_.subgraphs[i];
      const SubgraphSummary& b = summary_.subgraphs[i + 1];
      if (a.subgraph->retain.empty()) continue;
      const double xa = x(a.start + (a.report ? a.report->latency / 2 : 0));
      const double xb = x(b.start + (b.report ? b.report->latency / 2 : 0));
      Elements size = 0;
      for (TensorId t : a.subgraph->retain) {
        if (t >= 0 && t < static_cast<TensorId>(problem_.tensors.size())) size += problem_.tensors[t].size();
      }
      out += "<path class=\"edge\" d=\"M" + Num(xa, 3) + " 40 C" + Num(xa, 3) + " 6 " + Num(xb, 3) +
             " 6 " + Num(xb, 3) + " 40\" stroke=\"#2a9d3a\" stroke-width=\"2\" "
             "vector-effect=\"non-scaling-stroke\"><title>subgraph " + std::to_string(i) +
             " \u2192 " + std::to_string(i + 1) + ": retains tensor" +
             (a.subgraph->retain.size() > 1 ? "s " : " ") +
             IdsTitle(a.subgraph->retain, tensor_labels_) +
             " (" + Grouped(static_cast<double>(size)) + " elements)</title></path>\n";
    }
    out += "</svg>\n<div class=\"axis\" id=\"timeline-axis\" data-full=\"" +
           Num(total, 3) + "\" data-unit=\"\"></div>\n</section>\n";
    return out;
  }

  std::string WorkingSet() const {
    std::vector<std::optional<double>> peaks;
    for (const SubgraphSummary& s : summary_.subgraphs) {
      peaks.push_back(s.report ? std::optional<double>(static_cast<double>(s.report->peak_working_set))
                               : std::nullopt);
    }
    std::string out = OccupancyChart("ws", "Peak working set per subgraph",
                                     "the fast memory capacity", peaks,
                                     static_cast<double>(problem_.fast_memory_capacity), 170);
    if (!problem_.chip.any()) return out;
    // H1's buffers and H6's weight FIFO: one chart per buffer the chip checks, beside the one fast
    // memory (rule W).
    const ChipRules& c = problem_.chip;
    struct Role {
      const char* id;
      const char* name;
      Elements capacity;
      Elements RoleFootprints::*peak;
    };
    const Role roles[] = {{"ws-staging", "matrix staging", c.staging_capacity, &RoleFootprints::staging},
                          {"ws-accumulator", "accumulator", c.accumulator_capacity, &RoleFootprints::accumulator},
                          {"ws-vector", "vector buffer", c.vector_capacity, &RoleFootprints::vector},
                          {"ws-weight-fifo", "weight FIFO", c.two_paths() ? c.weight_fifo_capacity : 0,
                           &RoleFootprints::weight_fifo}};
    for (const Role& role : roles) {
      if (role.capacity <= 0) continue;
      std::vector<std::optional<double>> role_peaks;
      for (const SubgraphSummary& s : summary_.subgraphs) {
        role_peaks.push_back(s.roles ? std::optional<double>(static_cast<double>((*s.roles).*role.peak))
                                     : std::nullopt);
      }
      out += OccupancyChart(role.id, std::string("Peak ") + role.name + " occupancy per subgraph",
                            role.peak == &RoleFootprints::weight_fifo
                                ? std::string("its capacity (chip rule H6)")
                                : std::string("its capacity (chip rule H1, after double buffering and "
                                              "accumulator precision)"),
                            role_peaks, static_cast<double>(role.capacity), 120);
    }
    return out;
  }

  // One bar per subgraph (its peak, or a red stub when it has none) against a capacity line,
  // zoomable along x.
  std::string OccupancyChart(const std::string& id, const std::string& heading,
                             const std::string& against,
                             const std::vector<std::optional<double>>& peaks, double capacity,
                             double height) const {
    double top = capacity;
    for (const std::optional<double>& p : peaks) {
      if (p) top = std::max(top, *p);
    }
    top *= 1.08;
    const double plot = height - 20, base = height - 10;
    const auto y = [&](double v) { return base - v / top * plot; };
    const int n = std::max(1, static_cast<int>(peaks.size()));
    const double slot = kChartWidth / n;
    std::string out = "<section id=\"" + id + "-section\">\n<h2>" + HtmlEscape(heading) +
                      " <span class=\"hint\">against " + HtmlEscape(against) + " (" +
                      Grouped(capacity) + "), one bar per subgraph in order; wheel: zoom, drag: "
                      "pan</span><button data-reset=\"" + id + "\">fit</button></h2>\n";
    out += "<svg id=\"" + id + "\" class=\"zoom focusable\" data-zoom=\"x\" viewBox=\"0 0 " +
           Num(kChartWidth, 0) + " " + Num(height, 0) + "\" preserveAspectRatio=\"none\" style=\"height:" +
           Num(height, 0) + "px\">\n";
    for (const double t : Ticks(0, top, 4)) {
      out += "<line x1=\"0\" x2=\"" + Num(kChartWidth, 0) + "\" y1=\"" + Num(y(t)) + "\" y2=\"" +
             Num(y(t)) + "\" stroke=\"#eef0f4\" vector-effect=\"non-scaling-stroke\"/>\n";
    }
    for (int i = 0; i < static_cast<int>(peaks.size()); ++i) {
      const double bx = i * slot + slot * 0.1, bw = slot * 0.8;
      if (!peaks[i]) {
        out += "<g class=\"bar\"" + SgAttr({i}) + "><rect class=\"ws\" x=\"" + Num(bx, 3) +
               "\" y=\"" + Num(base - 6) + "\" width=\"" + Num(bw, 3) +
               "\" height=\"6\" fill=\"#c62828\"/><title>subgraph " + std::to_string(i) +
               " not priced</title></g>\n";
        continue;
      }
      const double peak = *peaks[i];
      const double ratio = capacity > 0 ? peak / capacity : 0;
      const char* fill = ratio > 0.95 ? "#d9534f" : ratio > 0.75 ? "#e8b23a" : "#4aa88c";
      out += "<g class=\"bar\"" + SgAttr({i}) + "><rect class=\"ws\" x=\"" + Num(bx, 3) +
             "\" y=\"" + Num(y(peak), 2) + "\" width=\"" + Num(bw, 3) + "\" height=\"" +
             Num(base - y(peak), 2) + "\" fill=\"" + fill + "\"/><title>subgraph " +
             std::to_string(i) + ": peak " + Grouped(peak) + " (" + PercentText1(ratio * 100) +
             " of the capacity)</title></g>\n";
    }
    out += "<line x1=\"0\" x2=\"" + Num(kChartWidth, 0) + "\" y1=\"" + Num(y(capacity)) +
           "\" y2=\"" + Num(y(capacity)) + "\" stroke=\"#c62828\" stroke-width=\"1.5\" "
           "stroke-dasharray=\"6 4\" vector-effect=\"non-scaling-stroke\"><title>capacity " +
           Grouped(capacity) + "</title></line>\n";
    out += "</svg>\n<div class=\"axis\" id=\"" + id + "-axis\" data-int data-full=\"" +
           std::to_string(n) + "\" data-unit=\"\"></div>\n<div class=\"legend\"><span>x: subgraph "
           "index; y: 0 to " + Grouped(top) + " elements</span><span><i style=\"background:#4aa88c\">"
           "</i>\u2264 75 % of the capacity</span><span><i style=\"background:#e8b23a\"></i>\u2264 "
           "95 %</span><span><i style=\"background:#d9534f\"></i>&gt; 95 %</span><span><i style=\""
           "background:#c62828\"></i>dashed: capacity</span></div>\n</section>\n";
    return out;
  }

  std::string Convergence() const {
    const std::vector<RunLogEntry>& log = *in_.log;
    std::string out = "<section id=\"convergence\">\n<h2>Search convergence <span class=\"hint\">" +
                      HtmlEscape(in_.log_name) + ": " + std::to_string(log.size()) +
                      " improvements, best latency over time by worker kind</span></h2>\n";
    if (log.empty()) return out + "<p>The log has no entries.</p>\n</section>\n";
    double t_max = 0, lo = log.front().latency, hi = log.front().latency;
    const Latency bound = log.back().lower_bound;
    for (const RunLogEntry& e : log) {
      t_max = std::max(t_max, e.seconds);
      lo = std::min(lo, e.latency);
      hi = std::max(hi, e.latency);
    }
    if (bound > 0) lo = std::min(lo, bound);
    t_max = t_max > 0 ? t_max * 1.05 : 1;
    const bool log_scale = lo > 0 && hi / lo > 4;
    const auto fy = [&](double v) { return log_scale ? std::log10(v) : v; };
    double ylo = fy(lo), yhi = fy(hi);
    const double pad = std::max((yhi - ylo) * 0.06, std::abs(yhi) * 1e-3 + 1e-9);
    ylo -= pad;
    yhi += pad;
    const double left = 70, right = kChartWidth - 10, top = 10, bottom = 230;
    const auto px = [&](double t) { return left + t / t_max * (right - left); };
    const auto py = [&](double v) { return bottom - (fy(v) - ylo) / (yhi - ylo) * (bottom - top); };

    std::map<std::string, std::string> colour;
    static const char* kPalette[] = {"#4a7fd4", "#e8913a", "#2a9d3a", "#9b59b6", "#c62828",
                                     "#17a2b8", "#8d6e63", "#7f8c8d"};
    std::map<std::string, int> count;
    for (const RunLogEntry& e : log) {
      if (!colour.count(e.worker)) {
        colour[e.worker] = kPalette[colour.size() % (sizeof kPalette / sizeof kPalette[0])];
      }
      ++count[e.worker];
    }
    out += "<svg viewBox=\"0 0 " + Num(kChartWidth, 0) + " 260\" style=\"height:auto\">\n";
    // Axes and ticks.
    out += "<line x1=\"" + Num(left) + "\" x2=\"" + Num(left) + "\" y1=\"" + Num(top) + "\" y2=\"" +
           Num(bottom) + "\" stroke=\"#888\"/><line x1=\"" + Num(left) + "\" x2=\"" + Num(right) +
           "\" y1=\"" + Num(bottom) + "\" y2=\"" + Num(bottom) + "\" stroke=\"#888\"/>\n";
    for (const double t : Ticks(0, t_max, 6)) {
      out += "<text x=\"" + Num(px(t)) + "\" y=\"" + Num(bottom + 16) +
             "\" text-anchor=\"middle\">" + Readable(t) + " s</text>\n";
    }
    std::vector<double> y_ticks;
    if (log_scale) {
      for (double d = std::pow(10.0, std::floor(ylo)); d <= std::pow(10.0, yhi); d *= 10) {
        for (const double m : {1.0, 2.0, 5.0}) {
          if (fy(d * m) >= ylo && fy(d * m) <= yhi) y_ticks.push_back(d * m);
        }
      }
    } else {
      y_ticks = Ticks(ylo, yhi, 5);
    }
    for (const double v : y_ticks) {
      out += "<line x1=\"" + Num(left) + "\" x2=\"" + Num(right) + "\" y1=\"" + Num(py(v)) +
             "\" y2=\"" + Num(py(v)) + "\" stroke=\"#eef0f4\"/><text x=\"" + Num(left - 6) +
             "\" y=\"" + Num(py(v) + 4) + "\" text-anchor=\"end\">" + Compact(v) + "</text>\n";
    }
    if (bound > 0) {
      out += "<line x1=\"" + Num(left) + "\" x2=\"" + Num(right) + "\" y1=\"" + Num(py(bound)) +
             "\" y2=\"" + Num(py(bound)) + "\" stroke=\"#c62828\" stroke-dasharray=\"6 4\"/>"
             "<text x=\"" + Num(right - 4) + "\" y=\"" + Num(py(bound) - 5) +
             "\" text-anchor=\"end\" style=\"fill:#c62828\">lower bound " + Grouped(bound) +
             "</text>\n";
    }
    // The best-so-far staircase, then one dot per improvement in its worker's colour.
    double best = log.front().latency;
    std::string d = "M" + Num(px(log.front().seconds)) + " " + Num(py(best));
    for (size_t i = 1; i < log.size(); ++i) {
      best = std::min(best, log[i].latency);
      d += " H" + Num(px(log[i].seconds)) + " V" + Num(py(best));
    }
    d += " H" + Num(px(t_max));
    out += "<path d=\"" + d + "\" fill=\"none\" stroke=\"#444\" stroke-width=\"1.5\"/>\n";
    for (const RunLogEntry& e : log) {
      out += "<circle cx=\"" + Num(px(e.seconds)) + "\" cy=\"" + Num(py(e.latency)) +
             "\" r=\"3.5\" fill=\"" + colour[e.worker] + "\"><title>" + HtmlEscape(e.worker) +
             ": " + Grouped(e.latency) + " at " + Readable(e.seconds) + " s</title></circle>\n";
    }
    out += "</svg>\n<div class=\"legend\">";
    for (const auto& [worker, c] : colour) {
      out += "<span><i style=\"background:" + c + "\"></i>" + HtmlEscape(worker) + " (" +
             std::to_string(count.at(worker)) + ")</span>";
    }
    out += "<span>y: total latency" + std::string(log_scale ? " (log scale)" : "") +
           "; final " + Grouped(best) + " at " + Readable(log.back().seconds) + " s</span>";
    if (bound > 0 && std::abs(bound - summary_.bound.total()) > 1e-9 * std::max(1.0, bound)) {
      out += "<span class=\"bad\">the log's lower bound differs from this problem's (" +
             Grouped(summary_.bound.total()) + "): is it the log of another problem?</span>";
    }
    return out + "</div>\n</section>\n";
  }

  std::string Table() const {
    const double capacity = static_cast<double>(problem_.fast_memory_capacity);
    std::string out = "<section id=\"table-section\">\n<h2>Subgraphs <span class=\"hint\">hover "
                      "or click a row to find its ops in the DAG</span></h2>\n<div "
                      "class=\"tablewrap\">\n<table id=\"subgraphs\">\n<thead><tr><th>#</th><th "
                      "class=\"l\">ops</th><th>granularity</th><th>tiles \u00d7 k</th><th>latency"
                      "</th><th>share</th><th>compute</th><th>memory</th><th>bound</th><th>peak "
                      "working set</th><th>of capacity</th>";
    // H1's buffers and H6's FIFO, for a chip with rules: each checked buffer's peak and its share.
    const ChipRules& c = problem_.chip;
    const std::pair<const char*, Elements> roles[] = {
        {"staging", c.staging_capacity},
        {"accumulator", c.accumulator_capacity},
        {"vector", c.vector_capacity},
        {"weight FIFO", c.two_paths() ? c.weight_fifo_capacity : 0}};
    int role_columns = 0;
    for (const auto& [name, role_capacity] : roles) {
      if (!problem_.chip.any() || role_capacity <= 0) continue;
      out += std::string("<th>") + name + " peak</th>";
      ++role_columns;
    }
    out += "<th class=\"l\">retained in</th><th class=\"l\">retains</th></tr></thead>\n<tbody>\n";
    for (int i = 0; i < NumSubgraphs(); ++i) {
      const SubgraphSummary& s = summary_.subgraphs[i];
      const Subgraph& g = *s.subgraph;
      out += "<tr class=\"sg" + std::string(s.report ? "" : " broken") + "\" id=\"sg-" +
             std::to_string(i) + "\"" + SgAttr({i}) + "><td><span class=\"swatch\" "
             "style=\"background:" + SubgraphFill(i) + "\"></span>" + std::to_string(i) +
             "</td><td class=\"l\">" + IdsCell(g.ops, op_labels_) + "</td><td>" +
             GranularityText(g.granularity) + (s.partial_edge_tiles ? " *" : "") + "</td>";
      if (s.report) {
        const SubgraphReport& r = *s.report;
        const double share = summary_.total > 0 ? r.latency / summary_.total * 100 : 0;
        out += "<td>" + std::to_string(r.tiles) + " \u00d7 " + std::to_string(r.k_steps) +
               "</td><td>" + Grouped(r.latency) + "</td><td>" + PercentText1(share) + "</td><td>" +
               Grouped(r.compute_time) + "</td><td>" + Grouped(r.memory_time) + "</td><td>" +
               (s.memory_bound() ? "<span style=\"color:#b5651d\">memory</span>"
                                 : "<span style=\"color:#2f5fa8\">compute</span>") +
               "</td><td>" + Grouped(static_cast<double>(r.peak_working_set)) + "</td><td>" +
               PercentText1(capacity > 0 ? static_cast<double>(r.peak_working_set) / capacity * 100
                                        : 0) +
               "</td>";
        if (role_columns > 0) {
          const RoleFootprints peak = s.roles.value_or(RoleFootprints{});
          const Elements peaks[] = {peak.staging, peak.accumulator, peak.vector, peak.weight_fifo};
          for (int k = 0; k < 4; ++k) {
            if (roles[k].second <= 0) continue;
            const double share = static_cast<double>(peaks[k]) / static_cast<double>(roles[k].second) * 100;
            out += "<td" + std::string(share > 100 ? " class=\"bad\"" : "") + ">" +
                   Grouped(static_cast<double>(peaks[k])) + " (" + PercentText1(share) + ")</td>";
          }
        }
      } else {
        out += "<td colspan=\"" + std::to_string(8 + role_columns) + "\" class=\"l bad\">" +
               HtmlEscape(s.violation ? s.violation->Message() : "not priced") + "</td>";
      }
      out += "<td class=\"l\">" + JoinIds(s.retained_in, ", ") + "</td><td class=\"l\">" +
             IdsCell(g.retain, tensor_labels_) + "</td></tr>\n";
    }
    out += "</tbody>\n</table>\n</div>\n";
    if (!summary_.partial_edge_tiles.empty()) {
      out += "<div class=\"legend\">* partial edge tiles (spec O9)</div>\n";
    }
    return out + "</section>\n";
  }

  const ReportInput& in_;
  const Problem& problem_;
  const ScheduleSummary& summary_;
  std::vector<std::vector<int>> op_subgraphs_;  // per op, the subgraphs that compute it
  const std::vector<ItemLabel>* op_labels_ = nullptr;      // per op, when labelled
  const std::vector<ItemLabel>* tensor_labels_ = nullptr;  // per tensor, when labelled
};

}  // namespace

std::string ReportHtml(const ReportInput& input) { return Report(input).Build(); }

}  // namespace annealer
