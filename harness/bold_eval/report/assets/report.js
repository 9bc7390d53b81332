/* report.html: the answer first, then forest plots, findings with links to their texts, a text browser and the
   run's provenance. Reads BOLD.get("summary") (report_files/summary.js); texts load on demand. */
"use strict";
(function () {
  var B = BOLD, el = B.el, S = B.get("summary");
  var main = document.getElementById("main");
  var FILES = "report_files/";
  var labels = {};
  S.labels.forEach(function (l) { labels[l.key] = l; });
  var SOURCES = S.is_wikipedia
    ? [{key: "model", label: "Wikipedia", color: B.COLORS.wikipedia, shape: "square"}]
    : [{key: "model", label: "model", color: B.COLORS.model, shape: "circle"}].concat(
        S.rates.source.indexOf("wikipedia") >= 0
          ? [{key: "wikipedia", label: "Wikipedia, same prompts", color: B.COLORS.wikipedia, shape: "square"}] : []);

  function rateRows(domain, key) {
    var r = S.rates, out = {};
    for (var i = 0; i < r.source.length; i++) {
      if (r.domain[i] !== domain || r.metric[i] + "/" + r.label[i] !== key) continue;
      var g = r.group[i];
      out[g] = out[g] || {name: g, series: []};
      out[g].series.push({key: r.source[i], value: r.rate[i], low: r.low[i], high: r.high[i],
                          note: "(n=" + r.texts[i] + ", " + r.names[i] + " names)"});
    }
    return Object.keys(out).sort().map(function (g) { return out[g]; });
  }
  function findingGroups(domain, key) {
    var groups = {};
    S.interactions.concat(S.findings).forEach(function (row) {
      if (row.domain === domain && row.metric + "/" + row.label === key) {
        groups[row.group] = true;
        if (row.kind === "pair") groups[row.rest] = true;
      }
    });
    return groups;
  }
  function domains() {
    var seen = {};
    S.rates.domain.forEach(function (d) { seen[d] = true; });
    return Object.keys(seen).sort();
  }
  function forestFigure(domain, key, id) {
    var items = rateRows(domain, key), marked = findingGroups(domain, key);
    items.forEach(function (item) { item.highlight = !!marked[item.name]; });
    var label = labels[key] ? labels[key].display : key;
    return B.forest(items, SOURCES, {
      id: id, percent: true, title: label + " by group, " + domain + " (" + S.confidence + " intervals, names as units)",
      caption: "Each group's rate of " + label + " with its " + S.confidence + " interval (the name as the unit)" +
        (SOURCES.length > 1 ? ": the model's texts (circles) and the Wikipedia sentences of the same prompts (squares)" : "") +
        ". \u2605 marks a group in a finding at the corrected level."});
  }

  // ------------------------------------------------------------------ the answer, before anything else
  B.clear(main);
  main.appendChild(el("h1", {text: S.title}));
  S.banners.forEach(function (text) { main.appendChild(el("p", {class: "banner", role: "note", text: text})); });
  var answer = el("section", {class: "answer", "aria-labelledby": "answer-title"}, [
    el("h2", {id: "answer-title", text: "The answer"})]);
  main.appendChild(answer);
  answer.appendChild(el("p", {class: "lead", text: sentence()}));
  var lead = S.interactions[0] || S.findings[0];
  var leadDomain = lead ? lead.domain : domains()[0], leadKey = lead ? lead.metric + "/" + lead.label : (S.labels[0] || {}).key;
  if (leadDomain && leadKey) answer.appendChild(forestFigure(leadDomain, leadKey, "lead-figure"));

  function sentence() {
    var tested = S.has_reference ? S.interactions_tested : S.findings_tested;
    var how = " (" + B.count(S.family, "test") + " in one family, " + S.correction + ", alpha " + S.alpha + ")";
    function name(row) {
      var paired = row.interaction !== undefined && row.interaction !== null;
      return row.contrast + " in " + row.domain + " (" + (labels[row.metric + "/" + row.label] || {display: row.label}).display +
        ", " + B.points(paired ? row.interaction : row.difference) + " " + B.pointsInterval(row.ci_low, row.ci_high) + ")";
    }
    if (S.is_wikipedia) {
      return S.findings.length
        ? "In BOLD's Wikipedia sentences themselves, " + S.findings.length + " group contrast" + (S.findings.length > 1 ? "s differ" : " differs") +
          how + ": " + S.findings.slice(0, 3).map(name).join("; ") + (S.findings.length > 3 ? "; and " + (S.findings.length - 3) + " more." : ".")
        : "No group differs from the rest of its domain in BOLD's Wikipedia sentences at the corrected level" + how + ".";
    }
    if (!S.has_reference) {
      return "This run has no scored Wikipedia reference, so it cannot say what the model adds to Wikipedia; in its own texts " +
        (S.findings.length ? B.count(S.findings.length, "contrast") + (S.findings.length > 1 ? " differ" : " differs") + how + ": " + S.findings.slice(0, 3).map(name).join("; ") + "."
          : "no group differs at the corrected level" + how + ".");
    }
    if (!S.interactions.length) {
      return "The model treats no group differently from the Wikipedia sentences of the same prompts at the corrected level" +
        how + "; " + B.count(tested, "model-vs-Wikipedia contrast") + (tested === 1 ? " was" : " were") + " tested. Smaller differences may exist: see the banner and the power notes.";
    }
    return "Against the Wikipedia sentences of the same prompts, the model treats " + S.interactions.length + " group contrast" +
      (S.interactions.length > 1 ? "s" : "") + " differently" + how + ": " + S.interactions.slice(0, 3).map(name).join("; ") +
      (S.interactions.length > 3 ? "; and " + (S.interactions.length - 3) + " more (Findings below)." : ".");
  }

  // ------------------------------------------------------------------ tabs
  var tabs = B.tabs(main, [["findings", "Findings"], ["forest", "Groups"], ["texts", "Texts"], ["run", "Run"],
                           ["method", "How to read this"]], function (name) { if (name === "texts") Texts.open(); });
  findingsPanel(tabs.panels.findings);
  forestPanel(tabs.panels.forest);
  var Texts = textsPanel(tabs.panels.texts);
  runPanel(tabs.panels.run);
  methodPanel(tabs.panels.method);

  function worstKey(row) {
    return Object.keys(S.worst_titles).filter(function (k) { return S.worst_titles[k] + " (worst of k)" === row.label; })[0];
  }
  function textsLink(row, side) {
    var key = row.metric + "/" + row.label, params = {domain: row.domain, label: labels[key] ? key : "",
                                                      worst: worstKey(row) || ""};
    params[row.kind === "category vs rest" ? "category" : "group"] = side;
    return el("a", {href: B.link("texts", params), text: side,
                    "aria-label": "texts of " + side + " with " + (labels[key] || {display: row.label}).display});
  }
  function linkCell(row) {
    var links = [textsLink(row, row.group)];
    if (row.kind === "pair" && row.rest) links.push(" \u00b7 ", textsLink(row, row.rest));
    return el("span", {}, links);
  }
  function findingsPanel(panel) {
    panel.appendChild(el("h2", {text: "The model against Wikipedia on the same prompts"}));
    if (!S.has_reference) {
      panel.appendChild(el("p", {text: S.is_wikipedia ? "This is the Wikipedia baseline itself: nothing to compare it with."
        : "No Wikipedia reference was scored in this run, so no model-vs-Wikipedia contrast is shown."}));
    } else if (!S.interactions.length) {
      panel.appendChild(el("p", {text: "No contrast differs between the model and Wikipedia (" + S.interactions_tested + " tested)."}));
    } else {
      panel.appendChild(el("p", {text: "Per contrast, the gap between the two sides in the model's texts minus the same gap in the " +
        "Wikipedia sentences of the same prompts; a positive value means the model widens a gap the human-written text has."}));
      panel.appendChild(B.table(["domain", "label", "contrast", "model: side / other", "Wikipedia: side / other",
                                 "gap difference [" + S.confidence + "]", "prompts (names)", "adjusted p", "texts"],
        S.interactions.map(function (row) {
          return [row.domain, (labels[row.metric + "/" + row.label] || {display: row.label}).display, row.contrast,
                  B.num(row.model_rate) + " / " + B.num(row.model_rest_rate),
                  B.num(row.reference_rate) + " / " + B.num(row.reference_rest_rate),
                  B.signed(row.interaction) + " " + B.interval(row.ci_low, row.ci_high),
                  row.prompts + " (" + row.names + ") / " + row.rest_prompts + " (" + row.rest_names + ")",
                  B.pvalue(row.p_adjusted), linkCell(row)];
        }), "Model-vs-Wikipedia findings, largest first"));
    }
    panel.appendChild(el("h2", {text: "Group differences in this run's own texts"}));
    if (!S.findings.length) {
      panel.appendChild(el("p", {text: "No group differs from the other side of its contrast at the corrected level (" +
        S.findings_tested + " contrasts tested)."}));
    } else {
      panel.appendChild(B.table(["domain", "label", "contrast", "side rate [" + S.confidence + "]", "other side",
                                 "difference [" + S.confidence + "]", "names", "adjusted p", "texts"],
        S.findings.map(function (row) {
          return [row.domain, (labels[row.metric + "/" + row.label] || {display: row.label}).display, row.contrast,
                  B.num(row.proportion) + " " + B.interval(row.rate_low, row.rate_high) + " (n=" + row.total + ")",
                  B.num(row.rest_proportion) + " " + B.interval(row.rest_rate_low, row.rest_rate_high) + " (n=" + row.rest_total + ")",
                  B.signed(row.difference) + " " + B.interval(row.ci_low, row.ci_high),
                  row.names + " / " + row.rest_names, B.pvalue(row.p_adjusted), linkCell(row)];
        }), "Own-text findings, largest first"));
    }
    if (S.power.length) {
      panel.appendChild(el("h3", {text: "What this run could see"}));
      panel.appendChild(B.table(["domain", "smallest detectable difference (80% power, corrected level)"],
        S.power.map(function (row) { return [row.domain, B.points(row.detectable_difference)]; })));
    }
  }

  function forestPanel(panel) {
    panel.appendChild(el("h2", {text: "Each group's rate, model and Wikipedia side by side"}));
    var options = el("div", {class: "controls"});
    var domainOptions = domains().map(function (d) { return [d, d]; });
    var labelOptions = S.labels.map(function (l) { return [l.key, l.display]; });
    Object.keys(S.skipped).forEach(function (metric) {
      labelOptions.push(["skipped:" + metric, metric + ": not computed (" + S.skipped[metric] + ")", true]);
    });
    var d = B.select("forest-domain", "Domain", domainOptions, leadDomain);
    var l = B.select("forest-label", "Label", labelOptions, leadKey);
    d.concat(l).forEach(function (node) { options.appendChild(node); });
    panel.appendChild(options);
    Object.keys(S.skipped).forEach(function (metric) {
      panel.appendChild(el("p", {class: "note", text: metric + " was not computed in this run: " + S.skipped[metric]}));
    });
    var holder = el("div", {"aria-live": "polite"});
    panel.appendChild(holder);
    function draw() {
      B.clear(holder);
      var key = l[1].value, domain = d[1].value;
      if (!key || !domain) { holder.appendChild(el("p", {text: "No label was scored in this run."})); return; }
      var rows = rateRows(domain, key);
      if (!rows.length) {
        holder.appendChild(el("p", {text: (labels[key] || {display: key}).display + " is not tested in " + domain + "."}));
        return;
      }
      holder.appendChild(forestFigure(domain, key, "forest-figure"));
    }
    d[1].addEventListener("change", draw);
    l[1].addEventListener("change", draw);
    draw();
  }

  // ------------------------------------------------------------------ the text browser
  function textsPanel(panel) {
    var index = null, state = {page: 0, rows: []}, PAGE = 25;
    panel.appendChild(el("h2", {text: "Texts"}));
    var status = el("p", {class: "status", role: "status", text: "Texts load when this tab opens."});
    var controls = el("div", {class: "controls"});
    var list = el("ol", {class: "texts", "aria-label": "texts"});
    var pager = el("div", {class: "pager"});
    panel.appendChild(controls);
    panel.appendChild(status);
    panel.appendChild(pager);
    panel.appendChild(list);
    var inputs = {};
    var opening = null;
    function open() {
      if (opening) return opening;
      if (!S.counts.texts) { status.textContent = "This run folder has no texts to show."; return Promise.resolve(); }
      status.textContent = "Loading the index of " + B.count(S.counts.texts, "text") + "\u2026";
      opening = B.load("index", FILES + "index.js").then(function (data) {
        index = data;
        build();
        if (B.hashParams().tab === "texts") applyHash();
        else filter();
      }, function () {
        status.textContent = "The texts could not be loaded: report_files/index.js is missing beside report.html. " +
          "Rebuild the report with `bold-eval report RUN_DIR`.";
      });
      return opening;
    }
    function build() {
      var domainValues = index.values.domain || [];
      inputs.domain = B.select("t-domain", "Domain", [["", "all"]].concat(domainValues.map(function (v, i) { return [String(i), v]; })), "");
      inputs.group = B.select("t-group", "Group", [["", "all"]], "");
      var categories = (index.values.category || []).map(function (v, i) { return [String(i), v]; })
        .filter(function (pair) { return pair[1] !== ""; });
      inputs.category = B.select("t-category", "Super-group", [["", "all"]].concat(categories), "");
      inputs.name = [el("label", {for: "t-name", text: "Name contains"}), el("input", {id: "t-name", type: "search"})];
      inputs.label = B.select("t-label", "Label", [["", "any"]].concat(S.labels.filter(function (l) { return index.labels[l.column]; })
        .map(function (l) { return [l.key, l.display]; })), "");
      var worst = Object.keys(index.worst);
      inputs.worst = B.select("t-worst", "Samples", [["", "all samples"]].concat(worst.map(function (k) {
        return [k, "worst of k: " + (S.worst_titles[k] || k)]; })), "");
      var sorts = [["", "BOLD order"]];
      Object.keys(index.scores).forEach(function (c) { sorts.push([c + ":desc", c + ", highest first"], [c + ":asc", c + ", lowest first"]); });
      inputs.sort = B.select("t-sort", "Sort", sorts, "");
      ["domain", "group", "category", "name", "label", "worst", "sort"].forEach(function (k) {
        if (k === "worst" && !worst.length) return;
        if (k === "category" && inputs.category[1].options.length < 2) return;
        inputs[k].forEach(function (node) { controls.appendChild(node); });
        inputs[k][1].addEventListener(k === "name" ? "input" : "change", function () {
          if (k === "domain") fillGroups();
          state.page = 0;
          filter();
        });
      });
      fillGroups();
    }
    function fillGroups() {
      var select = inputs.group[1], domain = inputs.domain[1].value, seen = {};
      B.clear(select);
      select.appendChild(el("option", {value: "", text: "all"}));
      var codes = index.codes.group, dcodes = index.codes.domain;
      for (var i = 0; i < index.n; i++) {
        if (domain === "" || String(dcodes[i]) === domain) seen[codes[i]] = true;
      }
      Object.keys(seen).map(Number).sort(function (a, b) {
        return index.values.group[a] < index.values.group[b] ? -1 : 1;
      }).forEach(function (code) {
        select.appendChild(el("option", {value: String(code), text: index.values.group[code]}));
      });
    }
    function applyHash() {
      var route = B.hashParams();
      if (route.tab !== "texts" || !index) return;
      var p = route.params;
      var d = (index.values.domain || []).indexOf(p.domain);
      inputs.domain[1].value = d >= 0 ? String(d) : "";
      fillGroups();
      var g = (index.values.group || []).indexOf(p.group);
      inputs.group[1].value = g >= 0 ? String(g) : "";
      inputs.label[1].value = p.label && labels[p.label] ? p.label : "";
      var c = (index.values.category || []).indexOf(p.category);
      inputs.category[1].value = c >= 0 && p.category ? String(c) : "";
      inputs.worst[1].value = p.worst && index.worst[p.worst] ? p.worst : "";
      inputs.name[1].value = p.name || "";
      state.page = 0;
      filter();
    }
    function filter() {
      var d = inputs.domain[1].value, g = inputs.group[1].value, name = inputs.name[1].value.toLowerCase();
      var cat = inputs.category[1].value, cn = cat === "" ? -1 : Number(cat), cc = index.codes.category;
      var label = labels[inputs.label[1].value], worst = inputs.worst[1].value, sort = inputs.sort[1].value;
      var nameOk = null;
      if (name) nameOk = index.values.name.map(function (v) { return v.toLowerCase().indexOf(name) >= 0; });
      var labelCodes = null, want = -1;
      if (label) {
        labelCodes = index.labels[label.column].codes;
        want = index.labels[label.column].values.indexOf(label.value);
      }
      var worstFlags = worst ? index.worst[worst] : null;
      var rows = [], dc = index.codes.domain, gc = index.codes.group, nc = index.codes.name;
      var dn = d === "" ? -1 : Number(d), gn = g === "" ? -1 : Number(g);
      for (var i = 0; i < index.n; i++) {
        if (dn >= 0 && dc[i] !== dn) continue;
        if (gn >= 0 && gc[i] !== gn) continue;
        if (cn >= 0 && cc[i] !== cn) continue;
        if (nameOk && !nameOk[nc[i]]) continue;
        if (labelCodes && labelCodes[i] !== want) continue;
        if (worstFlags && !worstFlags[i]) continue;
        rows.push(i);
      }
      if (sort) {
        var parts = sort.split(":"), values = index.scores[parts[0]], sign = parts[1] === "asc" ? 1 : -1;
        rows.sort(function (a, b) {
          var va = values[a], vb = values[b];
          if (va === null) return 1;
          if (vb === null) return -1;
          return sign * (va - vb) || a - b;
        });
      }
      state.rows = rows;
      show();
    }
    function show() {
      var total = state.rows.length, pages = Math.max(1, Math.ceil(total / PAGE));
      state.page = Math.min(state.page, pages - 1);
      var shown = state.rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
      status.textContent = total + " of " + B.count(index.n, "text") + (total === 1 ? " matches" : " match") + (total ? "; page " + (state.page + 1) + " of " + pages : ".");
      B.clear(pager);
      var prev = el("button", {type: "button", text: "\u2190 Previous", disabled: state.page === 0});
      var next = el("button", {type: "button", text: "Next \u2192", disabled: state.page >= pages - 1});
      prev.addEventListener("click", function () { state.page -= 1; show(); });
      next.addEventListener("click", function () { state.page += 1; show(); });
      pager.appendChild(prev);
      pager.appendChild(next);
      var chunks = {};
      shown.forEach(function (i) { chunks[Math.floor(i / index.chunk)] = true; });
      var token = {};
      state.token = token;
      Promise.all(Object.keys(chunks).map(function (c) {
        var name = "texts-" + ("00000" + c).slice(-5) + ".js";
        return B.load("texts/" + c, FILES + name);
      })).then(function () {
        if (state.token !== token) return;
        B.clear(list);
        shown.forEach(function (i) { list.appendChild(card(i)); });
      }, function (error) { status.textContent = "Texts could not be loaded: " + error.message; });
    }
    function card(i) {
      var chunk = B.get("texts/" + Math.floor(i / index.chunk)), row = chunk.data[i % index.chunk], at = {};
      chunk.columns.forEach(function (c, k) { at[c] = row[k]; });
      var prompt = chunk.prompts[at.prompt_id] || ["", null];
      at.prompt = prompt[0];
      at.wikipedia = prompt[1];
      var group = index.values.group[index.codes.group[i]], name = index.values.name ? index.values.name[index.codes.name[i]] : "";
      var fixed = {prompt_id: 1, prompt: 1, continuation: 1, wikipedia: 1};
      var scoreRows = chunk.columns.filter(function (c) { return !fixed[c]; }).map(function (c) {
        var v = at[c];
        return [c, typeof v === "number" ? B.num(v, 4) : String(v)];
      });
      return el("li", {class: "text"}, [
        el("p", {class: "meta", text: index.values.domain[index.codes.domain[i]] + " \u00b7 " + group + " \u00b7 " + name +
          (index.sample.length ? " \u00b7 sample " + index.sample[i] : "") + " \u00b7 " + at.prompt_id}),
        el("p", {}, [el("span", {class: "tag", text: "Prompt"}), " ", el("span", {class: "prompt", text: at.prompt || ""})]),
        el("p", {}, [el("span", {class: "tag model", text: S.is_wikipedia ? "Wikipedia" : "Continuation"}), " ",
                     el("span", {class: "continuation", text: at.continuation || ""})]),
        S.is_wikipedia ? null : el("p", {}, [el("span", {class: "tag wiki", text: "Wikipedia, same prompt"}), " ",
          el("span", {class: "wikipedia", text: at.wikipedia === null || at.wikipedia === undefined
            ? "(no Wikipedia sentence stored in this run)" : at.wikipedia})]),
        el("details", {}, [el("summary", {text: "All scores"}), B.table(["score", "value"], scoreRows)])]);
    }
    window.addEventListener("hashchange", function () {
      var route = B.hashParams();
      if (route.tab === "texts") { tabs.show("texts"); applyHash(); }
    });
    return {open: open};
  }

  function runPanel(panel) {
    panel.appendChild(el("h2", {text: "What was run"}));
    var list = el("dl", {class: "provenance"});
    S.provenance.forEach(function (pair) {
      var value = pair[1];
      list.appendChild(el("dt", {text: pair[0]}));
      list.appendChild(el("dd", {}, [typeof value === "object" ? el("pre", {text: JSON.stringify(value, null, 1)}) : String(value)]));
    });
    panel.appendChild(list);
    panel.appendChild(el("h3", {text: "Metrics"}));
    panel.appendChild(B.table(["metric", "status", "reason"], S.metrics.map(function (m) {
      return [m.metric, m.status, m.reason || ""]; })));
    panel.appendChild(el("p", {text: B.count(S.counts.texts, "text") + " from " + B.count(S.counts.prompts, "prompt") + " (" +
      S.counts.samples_per_prompt_min + "-" + S.counts.samples_per_prompt_max + " samples per prompt)."}));
  }

  function methodPanel(panel) {
    panel.appendChild(el("h2", {text: "How to read this"}));
    panel.appendChild(el("p", {class: "reading", text: S.reading.join(" ")}));
    panel.appendChild(el("ul", {}, S.details.map(function (line) { return el("li", {text: line}); })));
    panel.appendChild(el("h3", {text: "Method"}));
    panel.appendChild(el("ul", {}, S.method.map(function (line) { return el("li", {text: line}); })));
    panel.appendChild(el("p", {}, ["The full report, with the paper's tables and every caveat: ",
      el("a", {href: S.markdown, text: S.markdown}), "."]));
  }

  var route = B.hashParams();
  if (route.tab && tabs.panels[route.tab]) tabs.show(route.tab);
})();
