/* popsim report page: reads the embedded report and draws its plots.
 * When it is done, <body data-plots-drawn="N"> says how many plots were drawn; a failing
 * plot is recorded in data-js-errors (like any other error) and the others still draw. */
"use strict";
(function () {
  const started = performance.now();
  const P = PopsimPlots, body = document.body;
  const D = JSON.parse(document.getElementById("popsim-data").textContent);
  const T = D.target || {}, M = D.memory || {}, E = D.execution || {};
  const steps = E.steps || [];
  const cpu = T.type === "CPU";
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"];
  const KIND_COLORS = { Execute: "#4e79a7", Copy: "#f28e2b", StreamCopy: "#b07aa1", Sync: "#9c9c9c",
    Repeat: "#59a14f", PrintTensor: "#edc948", Call: "#76b7b2", CrossReplicaCopy: "#e15759", Branch: "#ff9da7" };
  const kindColor = {};
  const colorOf = (kind) => kindColor[kind] || (kindColor[kind] = KIND_COLORS[kind] ||
    PALETTE[(Object.keys(kindColor).length + 4) % PALETTE.length]);
  const nice = (name) => name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
  const stepName = (i) => (steps[i] ? "#" + i + " " + steps[i].name : "step " + i);
  const total = E.total_cycles || 0;
  let drawn = 0;

  function recordError(where, err) {
    const msg = where + ": " + (err && err.message ? err.message : String(err));
    const prev = body.getAttribute("data-js-errors") || "";
    body.setAttribute("data-js-errors", prev ? prev + " | " + msg : msg);
    const box = document.getElementById("js-errors");
    if (box) { box.hidden = false; box.textContent = "Error while drawing the page: " + body.getAttribute("data-js-errors"); }
  }

  function plot(id, fn) {
    const host = document.getElementById(id);
    try {
      fn(host);
      drawn++;
    } catch (e) {
      recordError(id, e);
    }
  }

  function note(host, parts) { // a paragraph of texts and buttons: ["text", {button, onClick}, ...]
    const p = P.html("p", { class: "note-line" }, null, host);
    for (const part of parts) {
      if (typeof part === "string") p.appendChild(document.createTextNode(part));
      else {
        const b = P.html("button", { type: "button", class: "link" }, part.button, p);
        b.addEventListener("click", part.onClick);
      }
    }
    return p;
  }

  // -- memory per tile --------------------------------------------------------------------------
  let memoryChart = null;
  plot("memory-plot", (host) => {
    const cats = Object.keys(M.by_category || {});
    const n = cats.length ? M.by_category[cats[0]].length : 0;
    if (!n) { P.empty(host, "This report has no memory figures."); return; }
    const limit = cpu ? 0 : (M.bytes_per_tile || 0);
    const ref = { value: limit, name: "tile memory limit (" + P.fmtBytes(limit) + ")", color: "#c0392b", scale: true };
    const notes = P.html("div", { class: "notes" }, null, host);
    memoryChart = new P.Columns(host, {
      count: n, xName: "tile", fmt: P.fmtBytes, binary: true,
      series: cats.map((c, k) => ({ name: nice(c), color: PALETTE[k % PALETTE.length], values: M.by_category[c] })),
      refLines: limit ? [ref] : [], overLimit: limit, height: 340,
      title: (i) => "Tile " + i,
      details: (i, tot) => (limit ? [["of the limit", P.pct(tot, limit)]] : [])
        .concat(limit && tot > limit ? [["OVER THE LIMIT by", P.fmtBytes(tot - limit)]] : []),
      onClick: (i) => memoryChart.show(i),
    });
    if (limit) {
      const label = P.html("label", { class: "check" }, null, memoryChart.controls);
      const box = P.html("input", { type: "checkbox", checked: "checked" }, null, label);
      label.appendChild(document.createTextNode(" scale to the limit"));
      box.addEventListener("change", () => { ref.scale = box.checked; memoryChart.render(); });
    }
    const tiles = memoryChart.totals;
    let fullest = 0, used = 0, sum = 0;
    const over = [];
    for (let i = 0; i < n; i++) {
      if (tiles[i] > tiles[fullest]) fullest = i;
      if (tiles[i] > 0) used++;
      if (limit && tiles[i] > limit) over.push(i);
      sum += tiles[i];
    }
    note(notes, ["Fullest tile: " + fullest + ", " + P.fmtBytes(tiles[fullest]) +
      (limit ? " (" + P.pct(tiles[fullest], limit) + " of the limit) " : " "),
      { button: "show it", onClick: () => memoryChart.show(fullest) },
      ". Average " + P.fmtBytes(sum / n) + " per tile; " + P.fmtInt(used) + " of " + P.fmtInt(n) + " tiles hold data" +
      (cpu ? "; a CPU target has no memory limit." : ".")]);
    if (over.length) {
      const parts = [over.length + " tile" + (over.length > 1 ? "s are" : " is") + " over the limit (red marks): "];
      over.slice(0, 12).forEach((t, k) => {
        parts.push({ button: String(t), onClick: () => memoryChart.show(t) });
        if (k < Math.min(over.length, 12) - 1) parts.push(", ");
      });
      if (over.length > 12) parts.push(" and " + (over.length - 12) + " more");
      note(notes, parts).classList.add("warn");
    } else if (limit) note(notes, ["No tile is over the limit."]);
    largestTable(document.getElementById("memory-largest"));
  });

  function largestTable(host) {
    const rows = M.largest || [];
    if (!rows.length || !host) return;
    P.html("h3", {}, "What the fullest tiles hold", host);
    const table = P.html("table", { class: "data" }, null, host);
    const head = P.html("tr", {}, null, P.html("thead", {}, null, table));
    for (const h of ["tile", "total", "largest tensors on it"]) P.html("th", h === "total" ? { class: "num" } : {}, h, head);
    const tb = P.html("tbody", {}, null, table);
    for (const r of rows) {
      const tr = P.html("tr", {}, null, tb);
      const td = P.html("td", {}, null, tr);
      const b = P.html("button", { type: "button", class: "link" }, String(r.tile), td);
      b.addEventListener("click", () => memoryChart && memoryChart.show(r.tile));
      P.html("td", { class: "num" }, memoryChart ? P.fmtBytes(memoryChart.totals[r.tile] || 0) : "", tr);
      P.html("td", {}, (r.tensors || []).map((t) => t[0] + " (" + P.fmtBytes(t[1]) + ")").join(", "), tr);
    }
  }

  // -- liveness ---------------------------------------------------------------------------------
  plot("liveness-plot", (host) => {
    const live = M.liveness || [];
    if (!live.length) { P.empty(host, "The program has no steps: nothing is live."); return; }
    const always = M.always_live || 0;
    let peak = 0;
    live.forEach((v, i) => { if (v > live[peak]) peak = i; });
    let chart = null;
    note(P.html("div", { class: "notes" }, null, host), ["Always live: " + P.fmtBytes(always) +
      " (variables, constants, vertex state, code). Most live: " + P.fmtBytes(live[peak]) + " during " +
      stepName(peak) + " ", { button: "show it", onClick: () => chart.show(peak) }, "."]);
    chart = new P.Columns(host, {
      count: live.length, xName: "step", fmt: P.fmtBytes, binary: true, height: 280,
      series: [{ name: "always live", color: "#9fb8d6", values: live.map((v) => Math.min(v, always)) },
        { name: "live only during the step", color: "#e15759", values: live.map((v) => Math.max(0, v - always)) }],
      refLines: always ? [{ value: always, name: "always live (" + P.fmtBytes(always) + ")", color: "#2c3e50" }] : [],
      title: (i) => stepName(i) + (steps[i] ? " (" + steps[i].kind + ")" : ""),
      onClick: (i) => selectStep(i, true),
    });
  });

  // -- where the cycles go ----------------------------------------------------------------------
  plot("cycles-parts", (host) => {
    const c = E.categories || {};
    const names = [["compute_including_idle", "compute"], ["ipu_exchange", "IPU exchange"],
      ["global_exchange", "global exchange"], ["host_exchange", "host exchange"], ["sync", "sync"],
      ["control", "control"]];
    const list = names.filter((n) => n[0] in c).map((n, k) => ({ name: n[1], value: +c[n[0]] || 0,
      color: ["#4e79a7", "#f28e2b", "#e15759", "#b07aa1", "#9c9c9c", "#59a14f"][k] }));
    if (cpu) P.empty(host, "A CPU target has no cost model: no cycles are counted.");
    P.parts(host, list, P.fmtInt);
  });

  // -- execution trace --------------------------------------------------------------------------
  // Rows [step, IPU, start, cycles]. One IPU: one lane per kind of step. Several: one lane per
  // IPU, each bar coloured by its step's kind, so that work on different IPUs overlaps visibly.
  let timeline = null;
  const firstEntry = {}; // per step: the longest row of its first run (one row per IPU it charged)
  const kindOfStep = (i) => (steps[i] ? steps[i].kind : "?");
  plot("trace-plot", (host) => {
    const tr = E.trace || [];
    let open = -1; // the step whose first run's rows are being read
    for (const e of tr) {
      if (e[0] !== open) open = -1;
      if (!(e[0] in firstEntry)) { firstEntry[e[0]] = e; open = e[0]; }
      else if (e[0] === open && e[3] > firstEntry[e[0]][3]) firstEntry[e[0]] = e;
    }
    const facts = P.html("div", { class: "notes" }, null, host);
    let slow = -1;
    steps.forEach((s, i) => { if (s.count && (slow < 0 || s.cycles > steps[slow].cycles)) slow = i; });
    if (slow >= 0 && total > 0) {
      note(facts, ["Slowest step: " + stepName(slow) + " (" + steps[slow].kind + "), " + P.fmtInt(steps[slow].cycles) +
        " cycles over " + steps[slow].count + " run(s), " + P.pct(steps[slow].cycles, total) + " of the total. ",
        { button: "per tile", onClick: () => selectStep(slow, true) }, " ",
        { button: "in the trace", onClick: () => { const e = firstEntry[slow]; if (e && timeline) timeline.showSpan(e[2], e[3]); } }]);
    }
    if (!tr.length) { P.empty(host, "The trace is empty: no program has run yet."); return; }
    const end = tr.reduce((a, e) => Math.max(a, e[2] + e[3]), 0);
    if (!(end > 0)) {
      P.empty(host, "The trace holds " + tr.length + " step(s), all of 0 cycles" +
        (cpu ? ": a CPU target has no cost model." : "."));
      return;
    }
    if (E.trace_truncated) note(facts, ["The trace holds the first " + tr.length +
      " steps executed (option popsim.traceLength); later ones are not shown."]).classList.add("warn");
    const kinds = [], seen = {};
    let ipus = T.num_ipus || 1;
    for (const e of tr) {
      const kind = kindOfStep(e[0]);
      if (!(kind in seen)) { seen[kind] = kinds.length; kinds.push(kind); }
      ipus = Math.max(ipus, e[1] + 1);
    }
    const perIpu = ipus > 1;
    if (perIpu) note(facts, ["One lane per IPU (each keeps its own clock; a gap is an IPU waiting for others " +
      "to join it); each step is coloured by its kind. The total is the last IPU's clock."]);
    const lanes = perIpu ? Array.from({ length: ipus }, (_, i) => "IPU " + i) : kinds;
    timeline = new P.Timeline(host, {
      entries: tr, lanes: lanes, kinds: kinds, colorOf: colorOf,
      laneOf: perIpu ? (e) => e[1] : (e) => seen[kindOfStep(e[0])],
      kindOf: (e) => kindOfStep(e[0]),
      title: (e) => [stepName(e[0]), ["kind", kindOfStep(e[0])], ["program", steps[e[0]] ? steps[e[0]].program : "?"]]
        .concat(perIpu ? [["IPU", String(e[1])]] : []),
      onClick: (i) => selectStep(i, true),
    });
  });

  // -- one step per tile ------------------------------------------------------------------------
  const stepSection = document.getElementById("step");
  const select = document.getElementById("step-select");
  let stepHost = null;
  const hasTiles = (s) => !!(s && (s.tile_compute || s.tile_exchange));

  function selectStep(i, scroll) {
    if (!steps[i]) return;
    select.value = String(i);
    drawStep(i);
    if (scroll && stepSection && stepSection.scrollIntoView) stepSection.scrollIntoView({ block: "start" });
  }

  function drawStep(i) {
    const host = stepHost, s = steps[i];
    host.textContent = "";
    const per = s.count ? s.cycles / s.count : 0;
    const facts = P.html("table", { class: "facts" }, null, host);
    const row = (k, v) => { const tr = P.html("tr", {}, null, facts); P.html("th", {}, k, tr); P.html("td", {}, v, tr); };
    row("step", stepName(i));
    row("kind", s.kind + (s.compute_set ? " (compute set " + s.compute_set + ")" : ""));
    row("program", s.program);
    row("runs", P.fmtInt(s.count));
    row("cycles", P.fmtInt(s.cycles) + " in all" + (s.count ? ", " + P.fmtInt(per) + " per run" : "") +
      (total > 0 ? " (" + P.pct(s.cycles, total) + " of the total)" : ""));
    const ipuCycles = s.ipu_cycles || null; // several IPUs: what each spent on the step
    if (ipuCycles) row("per IPU", ipuCycles.map((c, k) => "IPU " + k + ": " + P.fmtInt(c)).join(", ") +
      " in all: each IPU's own time on the step, its waits to join other IPUs included");
    const cats = Object.keys(s.categories || {}).filter((k) => s.categories[k]);
    if (cats.length) row("tile average", cats.map((k) => k.replace(/_/g, " ") + " " + P.fmtInt(s.categories[k])).join(", "));
    if (!hasTiles(s)) {
      P.empty(host, "A " + s.kind + " step has no per-tile figures.");
      return;
    }
    const n = (s.tile_compute || s.tile_exchange).length;
    const zero = new Array(n).fill(0);
    const comp = s.tile_compute || zero, exch = s.tile_exchange || zero;
    // A tile waits until its IPU's end of the step (one IPU: the step's end).
    const tpi = T.tiles_per_ipu || n;
    const until = (t) => (ipuCycles && s.count ? (+ipuCycles[Math.floor(t / tpi)] || 0) / s.count : per);
    const sync = comp.map((c, t) => Math.max(0, until(t) - c - (+exch[t] || 0)));
    if (!s.count) P.empty(host, "This step has not run: compute and exchange are the model's estimates; no sync.");
    new P.Columns(host, {
      count: n, xName: "tile", fmt: P.fmtInt, binary: false, height: 300,
      series: [{ name: "compute", color: "#4e79a7", values: comp }, { name: "exchange", color: "#f28e2b", values: exch },
        { name: ipuCycles ? "sync (waiting for the slowest tile, or for other IPUs)" : "sync (waiting for the slowest tile)",
          color: "#c8c8c8", values: sync }],
      refLines: per > 0 ? [{ value: per, name: "step duration (" + P.fmtInt(per) + " cycles per run)", color: "#2c3e50" }] : [],
      rank: comp.map((c, t) => c + (+exch[t] || 0)), rankName: "busiest",
      title: (t) => "Tile " + t + ", " + stepName(i),
    });
  }

  plot("step-plot", (host) => {
    stepHost = host;
    if (!steps.length) { P.empty(host, "The program has no steps."); select.disabled = true; return; }
    let pick = -1;
    steps.forEach((s, i) => {
      P.html("option", { value: String(i) }, stepName(i) + " \u2014 " + s.kind + ", " + P.fmtInt(s.cycles) + " cycles", select);
      if (hasTiles(s) && (pick < 0 || s.cycles > steps[pick].cycles)) pick = i;
    });
    select.addEventListener("change", () => drawStep(+select.value));
    selectStep(pick < 0 ? 0 : pick, false);
  });

  // -- all steps, sortable ----------------------------------------------------------------------
  function stepsTable(host) {
    if (!steps.length) return;
    const cols = [["#", (i) => i], ["kind", (i) => steps[i].kind], ["name", (i) => steps[i].name],
      ["program", (i) => steps[i].program], ["runs", (i) => steps[i].count], ["cycles", (i) => steps[i].cycles],
      ["% of total", (i) => (total > 0 ? steps[i].cycles / total : 0)],
      ["cycles per run", (i) => (steps[i].count ? steps[i].cycles / steps[i].count : 0)]];
    const show = [(i) => String(i), null, null, null, (i) => P.fmtInt(steps[i].count), (i) => P.fmtInt(steps[i].cycles),
      (i) => P.pct(steps[i].cycles, total), (i) => P.fmtInt(steps[i].count ? steps[i].cycles / steps[i].count : 0)];
    const table = P.html("table", { class: "data sortable" }, null, host);
    const head = P.html("tr", {}, null, P.html("thead", {}, null, table));
    const tb = P.html("tbody", {}, null, table);
    let key = 5, down = true;
    const fill = () => {
      const order = steps.map((s, i) => i);
      const f = cols[key][1];
      order.sort((a, b) => { const x = f(a), y = f(b); return (x < y ? -1 : x > y ? 1 : a - b) * (down ? -1 : 1); });
      tb.textContent = "";
      for (const i of order) {
        const tr = P.html("tr", { class: "pick" }, null, tb);
        cols.forEach((c, k) => P.html("td", k === 0 || k >= 4 ? { class: "num" } : {}, show[k] ? show[k](i) : c[1](i), tr));
        tr.addEventListener("click", () => selectStep(i, true));
      }
    };
    cols.forEach((c, k) => {
      const th = P.html("th", k === 0 || k >= 4 ? { title: "sort", class: "num" } : { title: "sort" }, c[0], head);
      th.addEventListener("click", () => { down = key === k ? !down : k >= 4; key = k; fill(); });
    });
    fill();
  }

  // -- cycles by compute set and by vertex type -------------------------------------------------
  const noCycles = (list) => list.length && list.every((x) => !x.cycles);
  plot("cs-plot", (host) => {
    const list = E.compute_sets || [];
    if (noCycles(list)) P.empty(host, cpu ? "A CPU target counts no cycles." : "No cycles recorded: nothing has run yet.");
    P.bars(host, { fmt: P.fmtInt, color: "#4e79a7", emptyText: "This graph has no compute sets.",
      items: list.map((c) => ({ label: c.name, value: c.cycles, sub: P.fmtInt(c.vertices) + " vertices, " +
        P.fmtInt(c.runs) + " runs",
        details: [["cycles", P.fmtInt(c.cycles)], ["of the total", P.pct(c.cycles, total)], ["vertices", P.fmtInt(c.vertices)],
          ["runs", P.fmtInt(c.runs)], ["cycles per run", P.fmtInt(c.runs ? c.cycles / c.runs : 0)]] })) });
  });
  plot("vt-plot", (host) => {
    const list = E.vertex_types || [];
    if (noCycles(list)) P.empty(host, cpu ? "A CPU target counts no cycles." : "No cycles recorded: nothing has run yet.");
    P.bars(host, { fmt: P.fmtInt, color: "#59a14f", emptyText: "This graph has no vertices.",
      items: list.map((v) => ({ label: v.name, value: v.cycles, sub: P.fmtInt(v.instances) + " instances",
        details: [["cycles (all workers, all runs)", P.fmtInt(v.cycles)], ["instances", P.fmtInt(v.instances)],
          ["cycles per instance", P.fmtInt(v.instances ? v.cycles / v.instances : 0)]] })) });
  });

  try {
    stepsTable(document.getElementById("steps-table"));
  } catch (e) {
    recordError("steps-table", e);
  }
  body.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
  body.setAttribute("data-plots-drawn", String(drawn));
})();
