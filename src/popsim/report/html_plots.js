/* popsim report page: small SVG plotting helpers, written for this page (no libraries).
 * Every text that comes from the report goes into the DOM through textContent or
 * setAttribute, never through innerHTML. */
"use strict";
var PopsimPlots = (function () {
  const NS = "http://www.w3.org/2000/svg";
  const W = 1100; // viewBox width of every plot; the SVG scales to the page width

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function html(tag, attrs, text, parent) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (parent) parent.appendChild(e);
    return e;
  }

  function label(parent, x, y, text, attrs) {
    const t = svg("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = text;
    return t;
  }

  // -- numbers ---------------------------------------------------------------------------------
  const fmtInt = (n) => Math.round(n).toLocaleString("en-US");
  function fmtBytes(n) {
    const a = Math.abs(n);
    if (a >= 1073741824) return (n / 1073741824).toFixed(1) + " GB";
    if (a >= 1048576) return (n / 1048576).toFixed(1) + " MB";
    if (a >= 1024) return (n / 1024).toFixed(1) + " kB";
    return fmtInt(n) + " B";
  }
  function fmtShort(n) { // axis labels for counts and cycles
    const a = Math.abs(n);
    if (a >= 1e9) return +(n / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return +(n / 1e6).toFixed(2) + "M";
    if (a >= 1e3) return +(n / 1e3).toFixed(1) + "k";
    return String(+n.toFixed(1));
  }
  const pct = (x, total) => (total > 0 ? (100 * x / total).toFixed(1) : "0.0") + "%";

  // Round tick positions over [0, max] (or [lo, hi]); binary units for bytes.
  function ticks(lo, hi, count, binary) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    let unit = 1;
    if (binary) for (const u of [1073741824, 1048576, 1024]) if (span >= 2 * u) { unit = u; break; }
    const raw = span / unit / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) || 10) * mag * unit;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push(v);
    return out;
  }

  // -- tooltip: one shared box; lines are strings or [name, value] pairs ---------------------------
  let tipBox = null;
  function tip(ev, lines) {
    if (!tipBox) tipBox = html("div", { class: "tip", role: "tooltip" }, null, document.body);
    tipBox.textContent = "";
    lines.forEach((line, i) => {
      const row = html("div", i === 0 ? { class: "tip-title" } : {}, null, tipBox);
      if (Array.isArray(line)) {
        if (line[2]) html("span", { class: "swatch", style: "background:" + line[2] }, null, row);
        html("span", { class: "tip-name" }, line[0], row);
        html("span", { class: "tip-value" }, line[1], row);
      } else row.textContent = line;
    });
    tipBox.style.display = "block";
    const r = tipBox.getBoundingClientRect();
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + r.width > window.innerWidth - 4) x = Math.max(4, ev.clientX - r.width - 14);
    if (y + r.height > window.innerHeight - 4) y = Math.max(4, ev.clientY - r.height - 14);
    tipBox.style.left = x + "px";
    tipBox.style.top = y + "px";
  }
  function untip() { if (tipBox) tipBox.style.display = "none"; }

  // Mouse x in viewBox units.
  function svgX(root, ev) {
    const r = root.getBoundingClientRect();
    return r.width ? (ev.clientX - r.left) * W / r.width : 0;
  }
  function svgY(root, ev, height) {
    const r = root.getBoundingClientRect();
    return r.height ? (ev.clientY - r.top) * height / r.height : 0;
  }

  function empty(host, text) {
    html("p", { class: "empty" }, text, host);
  }

  function legend(host, entries) {
    const box = html("div", { class: "legend" }, null, host);
    for (const e of entries) {
      const item = html("span", { class: "legend-item" }, null, box);
      html("span", { class: e.dash ? "swatch line" : "swatch", style: (e.dash ? "border-color:" : "background:") +
        e.color }, null, item);
      html("span", {}, e.name, item);
    }
    return box;
  }

  // Click-and-drag on a plot's overlay: a short click calls onClick(x), a drag onRange(x0, x1).
  function dragZoom(root, overlay, brush, onMove, onClick, onRange) {
    let from = null;
    const up = (ev) => {
      if (from === null) return;
      const x = svgX(root, ev), x0 = from;
      from = null;
      brush.style.display = "none";
      if (Math.abs(x - x0) > 3) onRange(Math.min(x0, x), Math.max(x0, x));
      else if (ev.target === overlay) onClick(x, ev);
    };
    overlay.addEventListener("mousedown", (ev) => {
      from = svgX(root, ev);
      ev.preventDefault();
      window.addEventListener("mouseup", up, { once: true });
    });
    overlay.addEventListener("mousemove", (ev) => {
      const x = svgX(root, ev);
      if (from !== null && Math.abs(x - from) > 3) {
        brush.setAttribute("x", Math.min(from, x));
        brush.setAttribute("width", Math.abs(x - from));
        brush.style.display = "";
      }
      onMove(ev, x);
    });
    overlay.addEventListener("mouseleave", () => { untip(); });
  }

  function button(host, text, title, fn) {
    const b = html("button", { type: "button", title: title }, text, host);
    b.addEventListener("click", fn);
    return b;
  }

  // -- stacked columns over an index (tiles, steps), zoomable --------------------------------------
  // o: {count, series: [{name, color, values}], xName, fmt, binary, refLines: [{value, name, color}],
  //     overLimit: value or null, title(i) -> string, details(i) -> lines, onClick(i), height}
  // When there are more columns than pixels, a column stands for a range of indices and shows
  // the fullest of them, so peaks (and tiles over the limit) never disappear.
  class Columns {
    constructor(host, o) {
      this.o = o;
      this.n = o.count;
      this.lo = 0;
      this.hi = this.n;
      this.mark = -1;
      this.height = o.height || 320;
      const tot = new Float64Array(this.n);
      for (const s of o.series) for (let i = 0; i < this.n; i++) tot[i] += +s.values[i] || 0;
      this.totals = tot;
      this.rank = o.rank || tot; // what picks the index a column shows when it stands for several
      const bar = html("div", { class: "controls" }, null, host);
      button(bar, "All", "show every " + o.xName, () => this.zoom(0, this.n));
      button(bar, "+", "zoom in", () => this.zoomBy(0.5));
      button(bar, "\u2212", "zoom out", () => this.zoomBy(2));
      button(bar, "\u25c0", "move left", () => this.pan(-0.5));
      button(bar, "\u25b6", "move right", () => this.pan(0.5));
      this.rangeText = html("span", { class: "range" }, "", bar);
      const go = html("input", { type: "number", min: 0, max: Math.max(0, this.n - 1), placeholder: o.xName,
        "aria-label": "go to " + o.xName }, null, bar);
      button(bar, "Show", "show this " + o.xName, () => { if (go.value !== "") this.show(+go.value); });
      go.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && go.value !== "") this.show(+go.value); });
      this.controls = bar;
      legend(host, o.series.map((s) => ({ name: s.name, color: s.color }))
        .concat((o.refLines || []).map((r) => ({ name: r.name, color: r.color, dash: true }))));
      this.root = svg("svg", { viewBox: "0 0 " + W + " " + this.height, class: "plot", role: "img" }, host);
      this.render();
    }

    zoom(lo, hi) {
      const span = Math.min(this.n, Math.max(Math.round(hi - lo), Math.min(this.n, 8)));
      lo = Math.max(0, Math.min(Math.round(lo), this.n - span));
      this.lo = lo;
      this.hi = lo + span;
      this.render();
    }
    zoomBy(f) {
      const mid = (this.lo + this.hi) / 2, span = (this.hi - this.lo) * f;
      this.zoom(mid - span / 2, mid + span / 2);
    }
    pan(f) {
      const d = (this.hi - this.lo) * f;
      this.zoom(this.lo + d, this.hi + d);
    }
    show(i) { // centre a window of 64 on index i and mark it
      i = Math.max(0, Math.min(this.n - 1, Math.floor(i)));
      this.mark = i;
      this.zoom(i - 32, i + 32);
    }

    render() {
      const o = this.o, root = this.root, H = this.height;
      const ml = 78, mr = 12, mt = 18, mb = 38, pw = W - ml - mr, ph = H - mt - mb;
      root.textContent = "";
      const n = this.hi - this.lo;
      if (this.n === 0) {
        label(root, W / 2, H / 2, o.emptyText || "nothing to show", { class: "note", "text-anchor": "middle" });
        return;
      }
      const per = Math.max(1, Math.ceil(n / pw)), bins = Math.ceil(n / per);
      const rep = new Int32Array(bins);
      let top = 0;
      for (let b = 0; b < bins; b++) {
        let best = this.lo + b * per;
        const end = Math.min(this.hi, best + per);
        for (let i = best + 1; i < end; i++) if (this.rank[i] > this.rank[best]) best = i;
        rep[b] = best;
        top = Math.max(top, this.totals[best]);
      }
      for (const r of o.refLines || []) if (r.value > 0 && (r.scale !== false)) top = Math.max(top, r.value);
      top = top > 0 ? top * 1.06 : 1;
      const y = (v) => mt + ph - v / top * ph, bw = pw / bins, gap = bw > 5 ? bw * 0.18 : 0;
      this.geom = { ml: ml, pw: pw, bw: bw, rep: rep };
      this.rangeText.textContent = o.xName + "s " + this.lo + "\u2013" + (this.hi - 1) + " of " + this.n +
        (per > 1 ? " (each column: the " + (o.rankName || "fullest") + " of " + per + ")" : "");
      // grid and axes
      const g = svg("g", { class: "axis" }, root);
      for (const v of ticks(0, top, 5, o.binary)) {
        svg("line", { x1: ml, x2: ml + pw, y1: y(v), y2: y(v), class: "grid" }, g);
        label(g, ml - 6, y(v) + 4, o.fmt(v), { "text-anchor": "end" });
      }
      for (const v of ticks(this.lo, this.hi - 1, 10, false)) {
        if (v !== Math.floor(v)) continue;
        const x = ml + (Math.floor((v - this.lo) / per) + 0.5) * bw;
        svg("line", { x1: x, x2: x, y1: mt + ph, y2: mt + ph + 4 }, g);
        label(g, x, mt + ph + 16, String(v), { "text-anchor": "middle" });
      }
      label(g, ml + pw / 2, H - 4, o.xName, { "text-anchor": "middle", class: "axis-title" });
      if (this.mark >= this.lo && this.mark < this.hi) {
        const b = Math.floor((this.mark - this.lo) / per);
        svg("rect", { x: ml + b * bw - 1, y: mt, width: bw + 2, height: ph, class: "mark" }, root);
      }
      // one path per series: every column's segment as a sub-path
      const base = new Float64Array(bins);
      for (const s of o.series) {
        const d = [];
        for (let b = 0; b < bins; b++) {
          const v = +s.values[rep[b]] || 0;
          if (v <= 0) continue;
          const y1 = y(base[b] + v), y0 = y(base[b]);
          base[b] += v;
          d.push("M" + (ml + b * bw + gap / 2).toFixed(2) + " " + y1.toFixed(2) + "h" + (bw - gap).toFixed(2) +
            "v" + (y0 - y1).toFixed(2) + "h" + (gap - bw).toFixed(2) + "z");
        }
        if (d.length) svg("path", { d: d.join(""), fill: s.color, class: "series" }, root);
      }
      for (const r of o.refLines || []) {
        if (!(r.value > 0) || r.value > top) continue;
        svg("line", { x1: ml, x2: ml + pw, y1: y(r.value), y2: y(r.value), stroke: r.color, class: "ref" }, root);
        label(root, ml + pw - 4, y(r.value) - 4, r.name, { "text-anchor": "end", class: "ref-label", fill: r.color });
      }
      if (o.overLimit > 0) { // a red mark above every column holding an index over the limit
        const d = [];
        for (let b = 0; b < bins; b++) {
          if (this.totals[rep[b]] <= o.overLimit) continue;
          const x = ml + (b + 0.5) * bw;
          d.push("M" + (x - 4).toFixed(2) + " " + (mt - 10) + "h8l-4 7z");
        }
        if (d.length) svg("path", { d: d.join(""), class: "over" }, root);
      }
      const brush = svg("rect", { x: 0, y: mt, width: 0, height: ph, class: "brush", style: "display:none" }, root);
      const overlay = svg("rect", { x: ml, y: mt - 12, width: pw, height: ph + 12, class: "overlay" }, root);
      const at = (x) => {
        const b = Math.floor((x - ml) / bw);
        return b >= 0 && b < bins ? rep[b] : -1;
      };
      dragZoom(root, overlay, brush, (ev, x) => {
        const i = at(x);
        if (i < 0) { untip(); return; }
        const b = Math.floor((x - ml) / bw), first = this.lo + b * per, last = Math.min(this.hi, first + per) - 1;
        const lines = [o.title(i)];
        if (per > 1) lines.push("column: " + o.xName + "s " + first + "\u2013" + last + ", showing the " + (o.rankName || "fullest"));
        for (const s of o.series) lines.push([s.name, o.fmt(+s.values[i] || 0), s.color]);
        lines.push(["total", o.fmt(this.totals[i])]);
        tip(ev, lines.concat(o.details ? o.details(i, this.totals[i]) : []));
      }, (x) => {
        const i = at(x);
        if (i >= 0 && o.onClick) o.onClick(i);
      }, (x0, x1) => {
        const b0 = Math.max(0, Math.floor((x0 - ml) / bw)), b1 = Math.min(bins - 1, Math.floor((x1 - ml) / bw));
        this.zoom(this.lo + b0 * per, this.lo + (b1 + 1) * per);
      });
      overlay.addEventListener("dblclick", () => this.zoom(0, this.n));
    }
  }

  // -- horizontal bars, one per item, sorted by value -------------------------------------------------
  // o: {items: [{label, value, sub, details: lines}], fmt, color, emptyText}
  function bars(host, o) {
    const items = o.items.slice().sort((a, b) => b.value - a.value);
    if (!items.length) { empty(host, o.emptyText); return; }
    const rowH = 20, mt = 24, mb = 8, longest = Math.max.apply(null, items.map((it) => it.label.length));
    const lw = Math.min(380, Math.max(90, longest * 6.8 + 10)), vw = 260, pw = W - lw - vw - 10;
    const H = mt + items.length * rowH + mb, top = Math.max(items[0].value, 0) || 1;
    const root = svg("svg", { viewBox: "0 0 " + W + " " + H, class: "plot bars", role: "img" }, host);
    const g = svg("g", { class: "axis" }, root);
    for (const v of ticks(0, top, 6, false)) {
      const x = lw + v / top * pw;
      svg("line", { x1: x, x2: x, y1: mt - 4, y2: H - mb, class: "grid" }, g);
      label(g, x, mt - 8, o.fmt(v), { "text-anchor": "middle" });
    }
    const d = [];
    items.forEach((it, k) => {
      const y0 = mt + k * rowH, w = Math.max(0, it.value / top * pw);
      let text = it.label;
      const room = Math.floor((lw - 10) / 6.8);
      if (text.length > room) text = text.slice(0, Math.max(1, room - 1)) + "\u2026";
      const t = label(root, lw - 6, y0 + rowH * 0.7, text, { "text-anchor": "end", class: "bar-label" });
      svg("title", {}, t).textContent = it.label;
      if (w > 0) d.push("M" + lw + " " + (y0 + 3) + "h" + w.toFixed(2) + "v" + (rowH - 6) + "h" + (-w).toFixed(2) + "z");
      label(root, lw + w + 6, y0 + rowH * 0.7, o.fmt(it.value) + (it.sub ? "  (" + it.sub + ")" : ""),
        { class: "bar-value" });
    });
    if (d.length) svg("path", { d: d.join(""), fill: o.color, class: "series" }, root);
    const overlay = svg("rect", { x: 0, y: mt, width: W, height: items.length * rowH, class: "overlay" }, root);
    overlay.addEventListener("mousemove", (ev) => {
      const k = Math.floor((svgY(root, ev, H) - mt) / rowH);
      if (k < 0 || k >= items.length) { untip(); return; }
      tip(ev, [items[k].label].concat(items[k].details || []));
    });
    overlay.addEventListener("mouseleave", untip);
  }

  // -- one horizontal bar split into parts (e.g. where the cycles go) ----------------------------------
  function parts(host, list, fmt) {
    const total = list.reduce((a, p) => a + p.value, 0);
    legend(host, list.map((p) => ({ name: p.name + ": " + fmt(p.value) + " (" + pct(p.value, total) + ")",
      color: p.color })));
    const root = svg("svg", { viewBox: "0 0 " + W + " 40", class: "plot parts", role: "img" }, host);
    if (!(total > 0)) {
      label(root, W / 2, 24, "no cycles recorded", { "text-anchor": "middle", class: "note" });
      return;
    }
    let x = 0;
    for (const p of list) {
      const w = p.value / total * W;
      if (w <= 0) continue;
      const r = svg("rect", { x: x, y: 6, width: Math.max(w, 0.5), height: 28, fill: p.color }, root);
      r.addEventListener("mousemove", (ev) => tip(ev, [p.name, ["cycles", fmt(p.value)], ["share", pct(p.value, total)]]));
      r.addEventListener("mouseleave", untip);
      x += w;
    }
  }

  // -- the execution trace: steps over cycles, one lane per step kind or per IPU, zoomable -------------
  // o: {entries: [[step, ipu, start, cycles]], lanes: [name], laneOf(entry) -> lane, kinds: [kind] (the legend),
  //     kindOf(entry) -> kind, colorOf(kind), title(entry) -> lines, onClick(step, entry)}
  // Each lane's entries must not overlap (one IPU's clock, or one kind on one IPU): they are
  // kept in start order, and a bar takes its kind's colour whatever its lane.
  class Timeline {
    constructor(host, o) {
      this.o = o;
      this.end = 0;
      for (const e of o.entries) this.end = Math.max(this.end, e[2] + e[3]);
      this.t0 = 0;
      this.t1 = this.end;
      this.byLane = o.lanes.map(() => []);
      this.kindOf = new Map();
      for (const e of o.entries) {
        this.byLane[o.laneOf(e)].push(e);
        this.kindOf.set(e, o.kindOf(e));
      }
      for (const list of this.byLane) list.sort((a, b) => a[2] - b[2]);
      const bar = html("div", { class: "controls" }, null, host);
      button(bar, "All", "show the whole trace", () => this.zoom(0, this.end));
      button(bar, "+", "zoom in", () => this.zoomBy(0.5));
      button(bar, "\u2212", "zoom out", () => this.zoomBy(2));
      button(bar, "\u25c0", "move left", () => this.pan(-0.5));
      button(bar, "\u25b6", "move right", () => this.pan(0.5));
      this.rangeText = html("span", { class: "range" }, "", bar);
      legend(host, o.kinds.map((k) => ({ name: k, color: o.colorOf(k) })));
      const n = Math.max(1, o.lanes.length);
      this.lane = n > 16 ? Math.max(10, Math.floor(448 / n)) : 28; // many IPUs: thinner lanes
      this.height = 46 + this.lane * n;
      this.root = svg("svg", { viewBox: "0 0 " + W + " " + this.height, class: "plot", role: "img" }, host);
      this.render();
    }
    zoom(t0, t1) {
      const span = Math.min(this.end, Math.max(t1 - t0, Math.min(this.end, 10)));
      t0 = Math.max(0, Math.min(t0, this.end - span));
      this.t0 = t0;
      this.t1 = t0 + span;
      this.render();
    }
    zoomBy(f) {
      const mid = (this.t0 + this.t1) / 2, span = (this.t1 - this.t0) * f;
      this.zoom(mid - span / 2, mid + span / 2);
    }
    pan(f) {
      const d = (this.t1 - this.t0) * f;
      this.zoom(this.t0 + d, this.t1 + d);
    }
    showSpan(start, cycles) { // zoom so that [start, start + cycles] fills a third of the view
      const span = Math.max(cycles * 3, 10);
      this.zoom(start + cycles / 2 - span / 2, start + cycles / 2 + span / 2);
    }
    render() {
      const o = this.o, root = this.root, H = this.height, lane = this.lane;
      const ml = 110, mr = 12, mt = 8, pw = W - ml - mr, ph = lane * o.lanes.length;
      root.textContent = "";
      const span = this.t1 - this.t0, k = span > 0 ? pw / span : 0;
      this.rangeText.textContent = "cycles " + fmtInt(this.t0) + "\u2013" + fmtInt(this.t1) + " of " + fmtInt(this.end);
      const g = svg("g", { class: "axis" }, root);
      for (const v of ticks(this.t0, this.t1, 8, false)) {
        const x = ml + (v - this.t0) * k;
        svg("line", { x1: x, x2: x, y1: mt, y2: mt + ph, class: "grid" }, g);
        label(g, x, mt + ph + 14, fmtShort(v), { "text-anchor": "middle" });
      }
      label(g, ml + pw / 2, H - 4, "cycles", { "text-anchor": "middle", class: "axis-title" });
      const paths = new Map(); // kind -> the sub-paths of its bars, in every lane
      const pad = lane >= 20 ? 4 : 1;
      o.lanes.forEach((name, l) => {
        label(g, ml - 8, mt + l * lane + lane * 0.62, name, { "text-anchor": "end" });
        const y = mt + l * lane + pad;
        for (const e of this.byLane[l]) {
          const s = e[2], f = e[2] + e[3];
          if (f < this.t0 || s > this.t1) continue;
          const x0 = ml + Math.max(0, s - this.t0) * k, x1 = ml + Math.min(span, f - this.t0) * k;
          const w = Math.max(0.8, x1 - x0), kind = this.kindOf.get(e);
          if (!paths.has(kind)) paths.set(kind, []);
          paths.get(kind).push("M" + x0.toFixed(2) + " " + y + "h" + w.toFixed(2) + "v" + (lane - 2 * pad) +
            "h" + (-w).toFixed(2) + "z");
        }
      });
      for (const [kind, d] of paths) svg("path", { d: d.join(""), fill: o.colorOf(kind), class: "series" }, root);
      const brush = svg("rect", { x: 0, y: mt, width: 0, height: ph, class: "brush", style: "display:none" }, root);
      const overlay = svg("rect", { x: ml, y: mt, width: pw, height: ph, class: "overlay" }, root);
      const find = (ev, x) => { // the longest entry of the lane under the mouse within 2 px
        const l = Math.floor((svgY(root, ev, H) - mt) / lane);
        if (l < 0 || l >= o.lanes.length || !(k > 0)) return null;
        const c = this.t0 + (x - ml) / k, slack = 2 / k, list = this.byLane[l];
        let lo = 0, hi = list.length;
        while (lo < hi) { const m = (lo + hi) >> 1; if (list[m][2] + list[m][3] < c - slack) lo = m + 1; else hi = m; }
        let best = null;
        for (let i = lo; i < list.length && list[i][2] <= c + slack; i++) if (!best || list[i][3] > best[3]) best = list[i];
        return best;
      };
      dragZoom(root, overlay, brush, (ev, x) => {
        const e = find(ev, x);
        if (!e) { untip(); return; }
        tip(ev, o.title(e).concat([["start", fmtInt(e[2]) + " cycles"], ["duration", fmtInt(e[3]) + " cycles"]]));
      }, (x, ev) => {
        const e = find(ev, x);
        if (e && o.onClick) o.onClick(e[0], e);
      }, (x0, x1) => this.zoom(this.t0 + (x0 - ml) / k, this.t0 + (x1 - ml) / k));
      overlay.addEventListener("dblclick", () => this.zoom(0, this.end));
    }
  }

  return { svg: svg, html: html, fmtInt: fmtInt, fmtBytes: fmtBytes, fmtShort: fmtShort, pct: pct, empty: empty,
    Columns: Columns, Timeline: Timeline, bars: bars, parts: parts, tip: tip, untip: untip };
})();
