// The flame graph's script (lua/wb/flame.lua embeds it in each SVG it writes; built into wb as
// module "wb.flame_js"). It runs when the parser reaches the end of the document, so everything
// above it exists. The placeholder C is set to becomes {"w": width, "pad": side padding, "charw":
// glyph advance, "highlight": search colour}. These leading comment lines are not embedded.
(function () {
  "use strict";
  var C = __CONFIG__;
  var frames = [], byG = new Map(), zoomed = null, searched = null, total = 0;
  var details = document.getElementById("details"), matched = document.getElementById("matched");
  var unzoom = document.getElementById("unzoom"), searchBtn = document.getElementById("search");
  var searchText = document.getElementById("search-label"), idle = details.textContent;

  function fit(name, w) {
    var room = Math.floor((w - 6) / C.charw), chars = Array.from(name);
    if (chars.length <= room) return name;
    return room < 5 ? "" : chars.slice(0, room - 2).join("") + "..";
  }
  function place(f, x, w) {
    f.rect.setAttribute("x", x.toFixed(2));
    f.rect.setAttribute("width", w.toFixed(2));
    f.text.setAttribute("x", (x + 3).toFixed(2));
    f.text.textContent = fit(f.name, w);
  }
  function show(f, visible, ancestor) {
    f.g.classList.toggle("hide", !visible);
    f.g.classList.toggle("anc", !!ancestor);
  }
  function remember() {
    try {
      var q = new URLSearchParams();
      if (zoomed) q.set("x", zoomed.name);
      if (searched !== null) q.set("s", searched);
      var s = q.toString();
      history.replaceState(null, "", location.pathname + (s ? "?" + s : ""));
    } catch (e) { /* file: URLs may refuse; the view still works */ }
  }
  function resetZoom() {
    frames.forEach(function (f) {
      show(f, true, false);
      f.rect.setAttribute("x", f.x0);
      f.rect.setAttribute("width", f.w0);
      f.text.setAttribute("x", f.tx0);
      f.text.textContent = f.label0;
    });
    zoomed = null;
    unzoom.classList.add("hide");
    remember();
  }
  function zoom(z) {
    if (z.d === 0) { resetZoom(); return; }
    var span = C.w - 2 * C.pad, k = span / z.n, end = z.s + z.n;
    frames.forEach(function (f) {
      if (f.d < z.d && f.s <= z.s && f.s + f.n >= end) {
        show(f, true, true);
        place(f, C.pad, span);
      } else if (f.d >= z.d && f.s >= z.s && f.s + f.n <= end) {
        show(f, true, false);
        place(f, C.pad + (f.s - z.s) * k, f.n * k);
      } else {
        show(f, false, false);
      }
    });
    zoomed = z;
    unzoom.classList.remove("hide");
    remember();
  }
  function clearSearch() {
    frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
    searched = null;
    matched.textContent = "";
    searchText.textContent = "Search";
    remember();
  }
  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) {
      matched.textContent = "Invalid regular expression: " + term;
      return;
    }
    var hits = [];
    frames.forEach(function (f) {
      var hit = re.test(f.name);
      f.rect.setAttribute("fill", hit ? C.highlight : f.fill);
      if (hit) hits.push(f);
    });
    hits.sort(function (a, b) { return a.s - b.s || b.n - a.n; });
    var covered = 0, end = -1;
    hits.forEach(function (f) {
      var e = f.s + f.n;
      if (f.s >= end) { covered += f.n; end = e; } else if (e > end) { covered += e - end; end = e; }
    });
    searched = term;
    matched.textContent = "Matched: " + (total > 0 ? (100 * covered / total).toFixed(2) : "0.00") +
      "% (" + hits.length + (hits.length === 1 ? " frame)" : " frames)");
    searchText.textContent = "Clear Search";
    remember();
  }
  function ask() {
    var term = window.prompt("Search frames (regular expression)", searched === null ? "" : searched);
    if (term === null) return;
    if (term === "") clearSearch(); else search(term);
  }
  function frameOf(el) {
    var g = el && el.closest ? el.closest("g.f") : null;
    return g ? byG.get(g) : undefined;
  }

  Array.prototype.forEach.call(document.getElementById("frames").children, function (g) {
    var rect = g.querySelector("rect"), text = g.querySelector("text");
    var tip = g.querySelector("title").textContent;
    var f = {
      g: g, rect: rect, text: text, tip: tip, name: tip.slice(0, tip.lastIndexOf(" (")),
      d: +g.getAttribute("data-d"), s: +g.getAttribute("data-s"), n: +g.getAttribute("data-n"),
      fill: rect.getAttribute("fill"), x0: rect.getAttribute("x"), w0: rect.getAttribute("width"),
      tx0: text.getAttribute("x"), label0: text.textContent
    };
    if (f.d === 0) total = f.n;
    frames.push(f);
    byG.set(g, f);
  });

  var area = document.getElementById("frames");
  area.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target);
    if (f) details.textContent = f.tip;
  });
  area.addEventListener("mouseout", function (e) {
    if (frameOf(e.target)) details.textContent = idle;
  });
  area.addEventListener("click", function (e) {
    var f = frameOf(e.target);
    if (f) zoom(f);
  });
  unzoom.addEventListener("click", resetZoom);
  searchBtn.addEventListener("click", function () { if (searched === null) ask(); else clearSearch(); });
  window.addEventListener("keydown", function (e) {
    if (((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) || e.key === "/") {
      e.preventDefault();
      ask();
    } else if (e.key === "Escape") {
      if (searched !== null) clearSearch();
      if (zoomed) resetZoom();
    }
  });

  var query = new URLSearchParams(location.search);
  if (query.get("x")) {
    var best = null;
    frames.forEach(function (f) { if (f.name === query.get("x") && (!best || f.n > best.n)) best = f; });
    if (best) zoom(best);
  }
  if (query.get("s")) search(query.get("s"));
})();
