/* index.html of `bold-eval leaderboard`: models x domains for one label, each model's difference from Wikipedia
   with its interval, ranks and tie groups; a model links to its report; two models side by side. */
"use strict";
(function () {
  var B = BOLD, el = B.el, D = B.get("board"), main = document.getElementById("main");
  var C = D.cells, P = D.pairs;
  var n = C.model.length;
  function rows(data) {
    var keys = Object.keys(data), out = [];
    for (var i = 0; i < data[keys[0]].length; i++) {
      var row = {};
      keys.forEach(function (k) { row[k] = data[k][i]; });
      out.push(row);
    }
    return out;
  }
  var cells = n ? rows(C) : [], pairs = P.model_a.length ? rows(P) : [];
  var keys = {};
  cells.forEach(function (c) { keys[c.metric + "/" + c.label] = {metric: c.metric, label: c.label, direction: c.direction}; });
  var keyList = Object.keys(keys).sort(function (a, b) {
    return (keys[b].direction !== 0) - (keys[a].direction !== 0) || (a < b ? -1 : 1);
  });
  function display(key) {
    var k = keys[key];
    return (D.metrics[k.metric] || k.metric) + ": " + k.label +
      (k.direction > 0 ? " (higher is worse)" : k.direction < 0 ? " (lower is worse)" : " (no direction: not ranked)");
  }
  var reports = {};
  D.models.forEach(function (m) { reports[m.label] = m.report; });
  function modelLink(label) {
    return reports[label] ? el("a", {href: reports[label], text: label}) : el("span", {text: label,
      title: "no report.html in this run folder: run `bold-eval report` on it, then rebuild the board"});
  }

  B.clear(main);
  main.appendChild(el("h1", {text: "BOLD leaderboard: " + B.count(D.models.length, "model") + " on " + B.count(D.prompts, "shared prompt")}));
  if (D.different) {
    main.appendChild(el("p", {class: "banner", role: "note", text: "The runs were generated from different prompt sets (" +
      Object.keys(D.prompts_per_run).map(function (k) { return k + ": " + D.prompts_per_run[k]; }).join(", ") +
      "); every number below comes from the " + B.count(D.prompts, "prompt") + " all runs share."}));
  }
  if (D.resources_warning) {
    main.appendChild(el("p", {class: "banner", role: "note", text: D.resources_warning}));
  }
  var small = D.power.filter(function (row) { return row.too_small; });
  if (small.length) {
    main.appendChild(el("p", {class: "banner", role: "note", text: "Too few shared prompts to rank models in " +
      (small.length === D.power.length ? "every domain" : small.length + " of " + D.power.length + " domains") + ": " + small.map(function (row) {
        return row.domain + " (" + (row.separable_difference === null ? "no testable pair" :
          Math.round(100 * row.separable_difference) + " points") +
          (row.hardest_pair === null || row.hardest_pair === undefined ? "" :
            "; " + Math.round(100 * row.hardest_pair) + " for the hardest pair") + ")"; }).join(", ") +
      ", the smallest difference two models could show and be told apart (80% power at the corrected level) for a " +
      "typical pair, and for the pair that needs the most. Shared ranks there say little; run the models on more prompts."}));
  }
  main.appendChild(el("p", {class: "lead", text: "Each cell is the model's rate of the label minus Wikipedia's on the same prompts (" +
    D.baseline + "), with its " + Math.round(100 * (1 - D.alpha)) + "% interval, names as units. Models that share a rank in a column " +
    "cannot be told apart at the corrected level (" + D.correction + " over the column's pairs); a rank is 1 + the number of models " +
    "that are better there."}));
  main.appendChild(el("details", {}, [el("summary", {text: "How to read this board"}), el("ul", {}, [
    el("li", {text: "Rates: each prompt's samples averaged into one rate; a model's rate and Wikipedia's are means over the shared prompts of a domain."}),
    el("li", {text: "Against Wikipedia: the paired cluster-robust test over names with the groups as strata (each source's CR2 variance about each group's own rate, at least what the rate of the hypothesis of equal rates allows, less the pairing's covariance; names - groups degrees of freedom), its interval the differences it does not reject; every model x column in one " + D.correction + " family of " + D.family + " tests. \u2731 marks a difference from Wikipedia at that level. Each rate carries its own name-level interval."}),
    el("li", {text: "Tie groups: every pair of models compared the same way on the same prompts, corrected per column. A label without a direction (psycholinguistic, gender polarity) is shown, not ranked."}),
    el("li", {text: "Wikipedia is not a fair baseline: its sentences show biases of their own (paper Sections 6.2 and 7). Compare models with each other."})])]));

  var controls = el("div", {class: "controls"});
  var labelSelect = B.select("label", "Label", keyList.map(function (k) { return [k, display(k)]; }), keyList[0]);
  labelSelect.forEach(function (node) { controls.appendChild(node); });
  main.appendChild(controls);
  var boardHolder = el("div", {"aria-live": "polite"});
  main.appendChild(boardHolder);

  function drawBoard() {
    B.clear(boardHolder);
    var key = labelSelect[1].value;
    if (!key) { boardHolder.appendChild(el("p", {text: "No label is shared by every run."})); return; }
    var mine = cells.filter(function (c) { return c.metric + "/" + c.label === key; });
    var domains = Array.from(new Set(mine.map(function (c) { return c.domain; }))).sort();
    var models = D.models.map(function (m) { return m.label; });
    var at = {};
    mine.forEach(function (c) { at[c.model + "\u0000" + c.domain] = c; });
    function meanRank(m) {
      var r = domains.map(function (d) { return (at[m + "\u0000" + d] || {}).rank; }).filter(function (v) { return v !== null && v !== undefined; });
      return r.length ? r.reduce(function (a, b) { return a + b; }, 0) / r.length : Infinity;
    }
    models.sort(function (a, b) { return meanRank(a) - meanRank(b) || (a < b ? -1 : 1); });
    var body = models.map(function (m) {
      return [modelLink(m)].concat(domains.map(function (d) {
        var c = at[m + "\u0000" + d];
        if (!c) return "not scored";
        var rank = c.rank === null || c.rank === undefined ? "" : "rank " + c.rank + " \u00b7 ";
        return el("span", {class: c.significant ? "tie" : ""}, [rank + B.points(c.difference) + " " +
          B.pointsInterval(c.ci_low, c.ci_high) + (c.significant ? " \u2731" : "") + "; rate " + B.num(c.model_rate) + " " +
          B.interval(c.model_low, c.model_high)]);
      }));
    });
    var wiki = ["Wikipedia (rate)"].concat(domains.map(function (d) {
      var c = mine.filter(function (x) { return x.domain === d; })[0];
      return c ? B.num(c.wikipedia_rate) + " " + B.interval(c.wikipedia_low, c.wikipedia_high) + " (" + c.prompts +
        " prompts, " + c.names + " names)" : "";
    }));
    boardHolder.appendChild(B.table(["model"].concat(domains), body.concat([wiki]), display(key) +
      ": difference from Wikipedia in points [interval]; the model's rate [interval]"));
    var ties = el("ul", {class: "ties"});
    domains.forEach(function (d) {
      var groups = {};
      mine.filter(function (c) { return c.domain === d && c.tie_group; }).forEach(function (c) { groups[c.rank] = c.tie_group; });
      var ranks = Object.keys(groups).map(Number).sort(function (a, b) { return a - b; });
      if (ranks.length) ties.appendChild(el("li", {text: d + ": " + ranks.map(function (r) { return r + ". " + groups[r]; }).join("  |  ")}));
    });
    if (ties.childNodes.length) {
      boardHolder.appendChild(el("h2", {text: "Tie groups"}));
      boardHolder.appendChild(ties);
    }
    domains.forEach(function (d) {
      var items = models.map(function (m) {
        var c = at[m + "\u0000" + d];
        return {name: m, highlight: c && c.significant, series: c ? [{key: "d", value: c.difference, low: c.ci_low, high: c.ci_high}] : []};
      });
      boardHolder.appendChild(el("h3", {text: d}));
      boardHolder.appendChild(B.forest(items, [{key: "d", label: "model minus Wikipedia", color: B.COLORS.model, shape: "circle"}],
        {id: "forest-" + d, percent: true, title: display(key) + ", " + d + ": each model minus Wikipedia",
         caption: "Each model's rate minus Wikipedia's on the same prompts, with its interval; \u2605 differs from Wikipedia at the corrected level."}));
    });
  }
  labelSelect[1].addEventListener("change", drawBoard);
  drawBoard();

  // ------------------------------------------------------------------ two models side by side
  main.appendChild(el("h2", {text: "Two models side by side"}));
  var names = D.models.map(function (m) { return [m.label, m.label]; });
  var pick = el("div", {class: "controls"});
  var a = B.select("model-a", "Model A", names, names[0] ? names[0][0] : "");
  var b = B.select("model-b", "Model B", names, names[1] ? names[1][0] : (names[0] || [""])[0]);
  a.concat(b).forEach(function (node) { pick.appendChild(node); });
  main.appendChild(pick);
  var pairHolder = el("div", {"aria-live": "polite"});
  main.appendChild(pairHolder);
  function drawPair() {
    B.clear(pairHolder);
    var ma = a[1].value, mb = b[1].value;
    if (!ma || !mb || ma === mb) { pairHolder.appendChild(el("p", {text: "Pick two different models."})); return; }
    var flip = false;
    var mine = pairs.filter(function (p) {
      if (p.model_a === ma && p.model_b === mb) return true;
      if (p.model_a === mb && p.model_b === ma) { flip = true; return true; }
      return false;
    });
    pairHolder.appendChild(B.table(["domain", "label", "A minus B [interval]", "adjusted p", "verdict"], mine.map(function (p) {
      var s = flip ? -1 : 1, diff = s * p.difference, low = flip ? -p.ci_high : p.ci_low, high = flip ? -p.ci_low : p.ci_high;
      var dir = (keys[p.metric + "/" + p.label] || {}).direction;
      var verdict = !p.significant ? "cannot be told apart" : dir ? ((dir * diff > 0) ? mb + " is better" : ma + " is better")
        : (diff > 0 ? ma + " higher" : mb + " higher");
      return [p.domain, display(p.metric + "/" + p.label), B.points(diff) + " " + B.pointsInterval(low, high), B.pvalue(p.p_adjusted), verdict];
    }), "A = " + ma + ", B = " + mb));
    var folders = D.models.filter(function (m) { return m.label === ma || m.label === mb; }).map(function (m) { return m.folder; });
    pairHolder.appendChild(el("p", {}, ["Every group contrast of the two, paired by prompt: ",
      el("code", {text: "bold-eval compare " + folders.join(" ") + " --out compare"})]));
  }
  a[1].addEventListener("change", drawPair);
  b[1].addEventListener("change", drawPair);
  drawPair();

  main.appendChild(el("h2", {text: "Runs"}));
  main.appendChild(B.table(["model", "generator", "chat protocol", "samples per prompt", "seed", "decoding"], D.models.map(function (m) {
    return [modelLink(m.label), m.generator || "", m.chat_template || "", m.samples || "", m.seed === null ? "" : m.seed,
            m.decoding ? JSON.stringify(m.decoding) : ""];
  })));
  main.appendChild(el("p", {class: "note", text: "Written by bold-eval " + D.version + ". Per-model results in the Hub leaderboard " +
    "template's layout: results/<org>/<model>/results_*.json; the same table as CSV in tables/."}));
})();
