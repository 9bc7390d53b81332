/* bold-eval pages: shared helpers. Data arrive as scripts calling BOLD.put(key, value) (see report/site.py);
   everything is put into the page with textContent or attributes, never innerHTML. */
"use strict";
var BOLD = (function () {
  var store = {}, waiting = {};
  var SVG = "http://www.w3.org/2000/svg";
  // Okabe-Ito: distinguishable with every common colour-vision deficiency.
  var COLORS = {model: "#0072B2", wikipedia: "#E69F00", finding: "#D55E00", grey: "#6b6b6b"};

  function put(key, value) {
    store[key] = value;
    (waiting[key] || []).forEach(function (resolve) { resolve(value); });
    delete waiting[key];
  }
  function get(key) { return store[key]; }
  /* Load `src` (a data script beside the page) once; resolves with what it puts under `key`. */
  function load(key, src) {
    if (key in store) return Promise.resolve(store[key]);
    return new Promise(function (resolve, reject) {
      var first = !(key in waiting);
      (waiting[key] = waiting[key] || []).push(resolve);
      if (!first) return;
      var tag = document.createElement("script");
      tag.src = src;
      tag.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(tag);
    });
  }
  /* el("a", {href: "#x", class: "y"}, ["text", child]) */
  function el(tag, attrs, children) {
    var node = tag.indexOf("svg:") === 0 ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) return;
      if (name === "text") node.textContent = String(value);
      else if (name === "href" && !/^(#|[\w.\/-]+\.html(#.*)?$|[\w.\/-]+\.md$)/.test(String(value))) return;
      else node.setAttribute(name, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function num(value, digits) {
    if (value === null || value === undefined || !isFinite(value)) return "n/a";
    return Number(value).toFixed(digits === undefined ? 3 : digits);
  }
  function signed(value, digits) {
    var text = num(value, digits);
    return value > 0 ? "+" + text : text;
  }
  function points(value) {
    if (value === null || value === undefined || !isFinite(value)) return "n/a";
    return (value > 0 ? "+" : "") + (100 * value).toFixed(1) + " points";
  }
  function count(n, noun, plural) {
    // "1 model", "24 prompts": the noun agrees with its number.
    return n + " " + (n === 1 ? noun : (plural || noun + "s"));
  }
  function interval(low, high, digits) {
    if (low === null || low === undefined || !isFinite(low)) return "no interval";
    return "[" + num(low, digits) + ", " + num(high, digits) + "]";
  }
  function pointsInterval(low, high) {
    if (low === null || low === undefined || !isFinite(low)) return "no interval";
    var f = function (v) { return (v > 0 ? "+" : "") + (100 * v).toFixed(1); };
    return "[" + f(low) + ", " + f(high) + "]";
  }
  function pvalue(p) {
    if (p === null || p === undefined || !isFinite(p)) return "n/a";
    return p < 0.001 ? "<0.001 (" + p.toExponential(1) + ")" : p.toFixed(3);
  }
  function table(columns, rows, caption) {
    var head = el("tr", {}, columns.map(function (c) { return el("th", {scope: "col", text: c}); }));
    var body = rows.map(function (cells) {
      return el("tr", {}, cells.map(function (cell) {
        return el("td", {}, [cell instanceof Node ? cell : String(cell === null || cell === undefined ? "" : cell)]);
      }));
    });
    return el("div", {class: "table-wrap"}, [el("table", {}, [caption ? el("caption", {text: caption}) : null,
      el("thead", {}, [head]), el("tbody", {}, body)])]);
  }
  function select(id, label, options, value) {
    var node = el("select", {id: id}, options.map(function (option) {
      return el("option", {value: option[0], selected: option[0] === value, disabled: option[2] || false,
                           text: option[1]});
    }));
    return [el("label", {for: id, text: label}), node];
  }
  /* Tabs: buttons with aria-controls; arrow keys move between them (WAI-ARIA tabs pattern). */
  function tabs(container, names, onShow) {
    var list = el("div", {role: "tablist", class: "tabs", "aria-label": "Sections"});
    var panels = {};
    var buttons = names.map(function (pair, i) {
      var button = el("button", {role: "tab", id: "tab-" + pair[0], "aria-controls": "panel-" + pair[0],
                                 "aria-selected": i === 0 ? "true" : "false", tabindex: i === 0 ? "0" : "-1",
                                 text: pair[1]});
      panels[pair[0]] = el("section", {role: "tabpanel", id: "panel-" + pair[0], "aria-labelledby": "tab-" + pair[0],
                                       tabindex: "0", hidden: i !== 0});
      button.addEventListener("click", function () { show(pair[0]); });
      button.addEventListener("keydown", function (event) {
        var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
        if (!step) return;
        var next = buttons[(i + step + buttons.length) % buttons.length];
        next.focus();
        next.click();
      });
      list.appendChild(button);
      return button;
    });
    container.appendChild(list);
    names.forEach(function (pair) { container.appendChild(panels[pair[0]]); });
    function show(name) {
      names.forEach(function (pair, i) {
        var on = pair[0] === name;
        buttons[i].setAttribute("aria-selected", on ? "true" : "false");
        buttons[i].setAttribute("tabindex", on ? "0" : "-1");
        panels[pair[0]].hidden = !on;
      });
      if (onShow) onShow(name);
    }
    return {panels: panels, show: show};
  }
  /* A forest plot: one row per item {name, series: [{key, value, low, high}], highlight}; `series` names the
     sources ({key, label, color, shape}). Returns a figure with the SVG (role img, a title and a description)
     and the same numbers as a table for readers who cannot see the chart. */
  function forest(items, series, options) {
    options = options || {};
    var row = 22, left = Math.min(260, 40 + 7 * Math.max.apply(null, items.map(function (i) { return i.name.length; })
      .concat([8]))), width = 720, right = 20, top = 28;
    var height = top + row * items.length + 30;
    var lo = 0, hi = 0;
    items.forEach(function (item) {
      item.series.forEach(function (s) {
        [s.value, s.low, s.high].forEach(function (v) {
          if (v !== null && v !== undefined && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        });
      });
    });
    if (options.range) { lo = options.range[0]; hi = options.range[1]; }
    if (hi <= lo) hi = lo + 1;
    var x = function (v) { return left + (width - left - right) * (v - lo) / (hi - lo); };
    var svg = el("svg:svg", {viewBox: "0 0 " + width + " " + height, role: "img", class: "forest",
                             "aria-labelledby": options.id ? options.id + "-title" : null});
    svg.appendChild(el("svg:title", {id: options.id ? options.id + "-title" : null, text: options.title || "forest plot"}));
    var raw = (hi - lo) / 5, power = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * power; }).filter(function (m) { return m >= raw; })[0];
    if (!options.range) { lo = Math.floor(lo / step) * step; hi = Math.ceil(hi / step) * step; }
    for (var v = lo; v <= hi + step / 1e6; v += step) {
      var px = x(v);
      svg.appendChild(el("svg:line", {x1: px, x2: px, y1: top - 6, y2: height - 24, class: "grid"}));
      svg.appendChild(el("svg:text", {x: px, y: height - 8, "text-anchor": "middle", class: "tick",
                                      text: options.percent ? +(100 * v).toFixed(1) + "%" : +v.toFixed(3) + ""}));
    }
    if (lo < 0 && hi > 0) svg.appendChild(el("svg:line", {x1: x(0), x2: x(0), y1: top - 6, y2: height - 24, class: "zero"}));
    series.forEach(function (s, i) {
      var lx = left + i * 150;
      svg.appendChild(marker(s, lx, 12));
      svg.appendChild(el("svg:text", {x: lx + 10, y: 16, class: "legend", text: s.label}));
    });
    items.forEach(function (item, r) {
      var y0 = top + r * row + row / 2;
      var label = el("svg:text", {x: left - 8, y: y0 + 4, "text-anchor": "end",
                                  class: item.highlight ? "name finding" : "name",
                                  text: (item.highlight ? "\u2605 " : "") + item.name});
      svg.appendChild(label);
      var n = item.series.length;
      item.series.forEach(function (s, j) {
        var spec = series.filter(function (d) { return d.key === s.key; })[0];
        var y = y0 + (j - (n - 1) / 2) * 7;
        if (s.low !== null && s.low !== undefined && isFinite(s.low)) {
          svg.appendChild(el("svg:line", {x1: x(s.low), x2: x(s.high), y1: y, y2: y, stroke: spec.color,
                                          "stroke-width": 2}));
        }
        if (s.value !== null && s.value !== undefined && isFinite(s.value)) svg.appendChild(marker(spec, x(s.value), y));
      });
    });
    var rows = items.map(function (item) {
      return [(item.highlight ? "\u2605 " : "") + item.name].concat(series.map(function (spec) {
        var s = item.series.filter(function (d) { return d.key === spec.key; })[0];
        return s ? num(s.value) + " " + interval(s.low, s.high) + (s.note ? " " + s.note : "") : "";
      }));
    });
    var details = el("details", {class: "data"}, [el("summary", {text: "The numbers as a table"}),
      table(["group"].concat(series.map(function (s) { return s.label; })), rows, options.title)]);
    return el("figure", {}, [svg, el("figcaption", {text: options.caption || ""}), details]);
  }
  function marker(spec, cx, cy) {
    if (spec.shape === "square") {
      return el("svg:rect", {x: cx - 4, y: cy - 4, width: 8, height: 8, fill: spec.color, class: "mark"});
    }
    if (spec.shape === "diamond") {
      return el("svg:path", {d: "M" + cx + " " + (cy - 5) + "l5 5l-5 5l-5-5z", fill: spec.color, class: "mark"});
    }
    return el("svg:circle", {cx: cx, cy: cy, r: 4.5, fill: spec.color, class: "mark"});
  }
  function hashParams() {
    var hash = location.hash.replace(/^#/, ""), at = hash.indexOf("?");
    var params = {};
    if (at >= 0) {
      hash.slice(at + 1).split("&").forEach(function (part) {
        var pair = part.split("=");
        if (pair[0]) params[decodeURIComponent(pair[0])] = decodeURIComponent(pair[1] || "");
      });
    }
    return {tab: at >= 0 ? hash.slice(0, at) : hash, params: params};
  }
  function link(tab, params) {
    return "#" + tab + "?" + Object.keys(params).filter(function (k) { return params[k] !== undefined && params[k] !== ""; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]); }).join("&");
  }
  return {put: put, get: get, load: load, el: el, clear: clear, num: num, signed: signed, points: points, count: count,
          interval: interval, pointsInterval: pointsInterval, pvalue: pvalue, table: table, select: select, tabs: tabs, forest: forest,
          hashParams: hashParams, link: link, COLORS: COLORS};
})();
