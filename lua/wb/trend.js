// The trend dashboard's script (embedded by lua/wb/trend.lua). Reads the JSON in #trend-data:
// {commits: [sha], records: [[dir, report|null, flame|null, created]], series: [{r, n, m, c, u,
// lo, sc, p: [[commit, record, median, lo, hi, records]], s: [[sample...]], st: [[point, ratio,
// ci_lo, ci_hi, p, verdict]]}]}, values quantized (value = lo + q * sc, -1 for none). Builds one
// card per series, draws a card's canvas when it first scrolls into view, filters the cards, and
// shows a point's commit and links on hover (a click keeps them). Filters can be given in the
// address (#recipe=R&machine=M&metric=X&name=N&steps=1).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trend-data").textContent);
  var grid = document.getElementById("grid");
  var cards = [];
  var tip = null, pinned = false;

  function value(s, q) { return q < 0 ? null : s.lo + q * s.sc; }
  function fmt(v, unit) {
    if (v === null) return "–";
    if (unit === "s") {
      if (Math.abs(v) >= 1) return v.toPrecision(4) + " s";
      if (Math.abs(v) >= 1e-3) return (v * 1e3).toPrecision(4) + " ms";
      return (v * 1e6).toPrecision(4) + " µs";
    }
    if (unit === "KiB") return v >= 1024 ? (v / 1024).toPrecision(4) + " MiB" : v.toPrecision(4) + " KiB";
    if (unit === "B") {
      var units = ["B", "KiB", "MiB", "GiB", "TiB"], k = 0;
      while (Math.abs(v) >= 1024 && k < units.length - 1) { v /= 1024; k++; }
      return v.toPrecision(4) + " " + units[k];
    }
    return v.toPrecision(4) + (unit ? " " + unit : "");
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function geometry(s, canvas) {
    var w = canvas.clientWidth || 340, h = canvas.clientHeight || 120, pad = 6;
    var n = s.p.length;
    return {
      w: w, h: h,
      x: function (i) { return n > 1 ? pad + (w - 2 * pad) * i / (n - 1) : w / 2; },
      y: function (q) { return h - pad - (h - 2 * pad) * q / 4000; }
    };
  }

  function draw(card) {
    var s = card.s, canvas = card.canvas, ratio = window.devicePixelRatio || 1;
    var g = geometry(s, canvas);
    canvas.width = g.w * ratio;
    canvas.height = g.h * ratio;
    var c = canvas.getContext("2d");
    c.scale(ratio, ratio);
    c.fillStyle = "rgba(84,160,255,.18)";
    for (var i = 0; i < s.p.length; i++) {
      var pt = s.p[i];
      if (pt[3] >= 0 && pt[4] >= 0) {
        var x0 = g.x(Math.max(i - 0.5, 0)), x1 = g.x(Math.min(i + 0.5, s.p.length - 1));
        c.fillRect(x0, g.y(pt[4]), Math.max(x1 - x0, 1), g.y(pt[3]) - g.y(pt[4]));
      }
    }
    c.fillStyle = "rgba(31,35,40,.35)";
    for (i = 0; i < s.s.length; i++) {
      var xs = s.s[i], x = g.x(i);
      for (var j = 0; j < xs.length; j++) c.fillRect(x - 1, g.y(xs[j]) - 1, 2, 2);
    }
    c.strokeStyle = "#0969da";
    c.lineWidth = 1.5;
    c.beginPath();
    for (i = 0; i < s.p.length; i++) {
      if (i === 0) c.moveTo(g.x(i), g.y(s.p[i][2])); else c.lineTo(g.x(i), g.y(s.p[i][2]));
    }
    c.stroke();
    for (i = 0; i < s.st.length; i++) {
      var st = s.st[i], sx = (g.x(st[0] - 1) + g.x(st[0])) / 2;
      c.strokeStyle = st[5] === "regression" ? "#b34700" : "#00795a";
      c.setLineDash([4, 3]);
      c.beginPath();
      c.moveTo(sx, 0);
      c.lineTo(sx, g.h);
      c.stroke();
      c.setLineDash([]);
    }
    c.fillStyle = "#59636e";
    c.font = "10px system-ui, sans-serif";
    var top = 0;
    s.s.forEach(function (xs) { xs.forEach(function (q) { if (q > top) top = q; }); });
    c.fillText(fmt(s.lo + top * s.sc, s.u), 2, 10);
    c.fillText(fmt(s.lo, s.u), 2, g.h - 2);
    card.drawn = true;
  }

  function hideTip() {
    if (tip) tip.remove();
    tip = null;
    pinned = false;
  }

  function showTip(card, ev, pin) {
    if (pinned && !pin) return;
    var s = card.s, rect = card.canvas.getBoundingClientRect(), g = geometry(s, card.canvas);
    var best = 0, dist = Infinity;
    for (var i = 0; i < s.p.length; i++) {
      var d = Math.abs(g.x(i) - (ev.clientX - rect.left));
      if (d < dist) { dist = d; best = i; }
    }
    var pt = s.p[best], rec = data.records[pt[1]] || [];
    if (tip) tip.remove();
    tip = el("div", "tip");
    var commit = pt[0] >= 0 ? data.commits[pt[0]].slice(0, 10) : "no commit";
    tip.appendChild(el("div", "", commit + " · " + (rec[3] || "") + (pt[5] > 1 ? " · " + pt[5] + " runs" : "")));
    tip.appendChild(el("div", "", "median " + fmt(value(s, pt[2]), s.u) + " of " + s.s[best].length + " samples"));
    var links = el("div");
    [["run", rec[0]], ["report", rec[1]], ["flame graph", rec[2]]].forEach(function (l) {
      if (!l[1]) return;
      var a = el("a", "", l[0]);
      a.href = l[1];
      links.appendChild(a);
      links.appendChild(document.createTextNode(" "));
    });
    tip.appendChild(links);
    tip.style.left = Math.min(g.x(best) + 14, g.w - 120) + "px";
    tip.style.top = "40px";
    card.div.appendChild(tip);
    pinned = !!pin;
  }

  var steps = 0;
  data.series.forEach(function (s) {
    var div = el("div", "card");
    div.appendChild(el("h3", "", s.n + " · " + s.m));
    div.appendChild(el("div", "sub", s.r + " · " + s.c + " · " + s.p.length + " points"));
    var canvas = el("canvas");
    div.appendChild(canvas);
    var card = { s: s, div: div, canvas: canvas, drawn: false };
    if (s.st.length) {
      var text = s.st.map(function (st) {
        var pt = s.p[st[0]], prev = s.p[st[0] - 1];
        var sha = function (p) { return p && p[0] >= 0 ? data.commits[p[0]].slice(0, 10) : "?"; };
        return st[5] + " " + ((st[1] - 1) * 100).toFixed(1).replace(/^(\d)/, "+$1") + "% at " + sha(pt) +
          " (from " + sha(prev) + (st[2] !== null ? "; CI " + st[2].toFixed(3) + "–" + st[3].toFixed(3) + "×" : "") +
          (typeof st[4] === "string" ? "; " + st[4] : st[4] !== null ? "; p = " + st[4].toPrecision(2) : "") + ")";
      });
      var p = el("div", "steps " + (s.st[0][5] === "regression" ? "slower" : "faster"), text.join("; "));
      p.setAttribute("data-steps", String(s.st.length));
      div.appendChild(p);
      steps += s.st.length;
    }
    canvas.addEventListener("mousemove", function (ev) { showTip(card, ev, false); });
    canvas.addEventListener("click", function (ev) { showTip(card, ev, true); });
    canvas.addEventListener("mouseleave", function () { if (!pinned) hideTip(); });
    cards.push(card);
    grid.appendChild(div);
  });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") hideTip(); });

  if ("IntersectionObserver" in window) {
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) {
          var card = cards[+e.target.getAttribute("data-i")];
          if (!card.drawn) draw(card);
          io.unobserve(e.target);
        }
      });
    }, { rootMargin: "400px" });
    cards.forEach(function (card, i) { card.div.setAttribute("data-i", String(i)); io.observe(card.div); });
  } else {
    cards.forEach(draw);
  }

  function options(id, key) {
    var sel = document.getElementById(id), seen = {};
    sel.appendChild(el("option", "", "all"));
    data.series.forEach(function (s) { seen[s[key]] = true; });
    Object.keys(seen).sort().forEach(function (v) { var o = el("option", "", v); o.value = v; sel.appendChild(o); });
    sel.addEventListener("change", filter);
    return sel;
  }
  var fr = options("f-recipe", "r"), fm = options("f-machine", "c"), fx = options("f-metric", "m");
  var fn = document.getElementById("f-name"), fs = document.getElementById("f-steps");
  fn.addEventListener("input", filter);
  fs.addEventListener("change", filter);
  function filter() {
    var shown = 0;
    cards.forEach(function (card) {
      var s = card.s;
      var ok = (fr.value === "all" || s.r === fr.value) && (fm.value === "all" || s.c === fm.value) &&
        (fx.value === "all" || s.m === fx.value) && (!fn.value || s.n.indexOf(fn.value) >= 0) &&
        (!fs.checked || s.st.length > 0);
      card.div.classList.toggle("hidden", !ok);
      if (ok) shown++;
    });
    document.getElementById("f-count").textContent = shown + " of " + cards.length + " series";
  }
  // filters given in the address: #recipe=bench&machine=...&metric=wall%20mean&name=app&steps=1
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("="), k = kv.slice(0, i), v;
    try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
    var sel = { recipe: fr, machine: fm, metric: fx }[k];
    if (sel) sel.value = v;
    else if (k === "name") fn.value = v;
    else if (k === "steps") fs.checked = v === "1";
  });
  filter();
  document.body.setAttribute("data-ready", String(Math.round(performance.now())));
  document.body.setAttribute("data-steps", String(steps));
})();
