// specload's Tokens tab: charts above the tab's per-rung table (see loadgen/tokens_tab.py).
// Locust renders an extended tab as its table only, so while the tab is open this script
// puts its own panel between the tab bar and the table, and redraws it from
// ./specload/live every POLL_MS with plotly.js, served by the same web UI.
(() => {
  "use strict";
  const KEY = "tokens";
  const POLL_MS = 2000;
  const PANEL_ID = "specload-tokens";
  const SHADES = {warmup: "rgba(127,127,127,0.13)", measure: "rgba(44,160,44,0.13)",
                  drain: "rgba(214,39,40,0.08)"};
  const UNSETTLED = "rgba(255,190,0,0.12)";
  const CHARTS = [
    {id: "output", title: "System output tok/s (tokens arriving, all users)", y: "tok/s",
     series: [["output_tok_s", "system output"]]},
    {id: "per-user", title: "Per-user tok/s: decode 1000/TPOT p50, tokens/E2E p50",
     y: "tok/s per user",
     series: [["decode_tok_s_per_user", "decode 1/TPOT"], ["request_tok_s_p50", "tokens/E2E"]]},
    {id: "chunk", title: "Tokens per chunk", y: "tokens per chunk",
     series: [["tokens_per_chunk", "tokens per chunk"]]},
    {id: "ttft", title: "TTFT p50 and p99 (requests started in each bin)", y: "ms (log)",
     log: true, series: [["ttft_p50_ms", "p50"], ["ttft_p99_ms", "p99"]]},
    {id: "concurrency", title: "Concurrency: users, requests in flight, achieved",
     y: "requests", series: []},
    {id: "load", title: "Load processes: worst CPU and event-loop lag p99 per second",
     y: "CPU % of a core", series: []},
  ];
  const NOTE = "Charts: the report's figures per time bin, each drawn once every request " +
    "that could count for it has ended (shaded yellow: still in flight). Shaded grey: " +
    "warmup, green: measure window. The table below fills in as rungs complete, with the " +
    "numbers the report computes.";
  const SHARED = " This process also runs the users: loading Locust's page holds their " +
    "event loop for tens of milliseconds (its own rendering); --processes N keeps the web " +
    "UI apart from them.";
  const view = {panel: null, polling: 0, plotly: null, payload: null, error: ""};
  window.specloadTokens = view;  // for tests and the curious: the payload last drawn

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.assign(node, attrs || {});
    if (text) node.textContent = text;
    return node;
  }

  function buildPanel() {
    const panel = el("div", {id: PANEL_ID});
    const style = el("style", {}, `
      #${PANEL_ID} { margin: 0 0 16px; font-family: inherit; }
      #${PANEL_ID} .sl-status { display: flex; gap: 10px; align-items: center;
        flex-wrap: wrap; margin: 4px 0 8px; font-size: 0.9rem; }
      #${PANEL_ID} .sl-badge { padding: 2px 8px; border-radius: 10px; color: #fff;
        font-weight: 600; }
      #${PANEL_ID} .sl-grid { display: grid; gap: 8px;
        grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); }
      #${PANEL_ID} .sl-chart { height: 300px; }
      #${PANEL_ID} .sl-note { font-size: 0.8rem; opacity: 0.75; margin: 6px 0 0; }`);
    const status = el("div", {className: "sl-status"});
    status.append(el("span", {className: "sl-badge"}, "load"), el("span", {className: "sl-load"}),
                  el("span", {className: "sl-run"}));
    const grid = el("div", {className: "sl-grid"});
    for (const chart of CHARTS) grid.append(el("div", {id: `specload-chart-${chart.id}`,
                                                       className: "sl-chart"}));
    const note = el("p", {className: "sl-note"}, NOTE);
    panel.append(style, status, grid, note);
    return panel;
  }

  function loadPlotly() {
    if (!view.plotly) {
      view.plotly = new Promise((resolve, reject) => {
        if (window.Plotly) return resolve(window.Plotly);
        const script = el("script", {src: "./specload/plotly.min.js"});
        script.onload = () => resolve(window.Plotly);
        script.onerror = () => reject(new Error("plotly.js did not load"));
        document.head.append(script);
      });
    }
    return view.plotly;
  }

  function shapes(p, withUnsettled) {
    const out = [];
    for (const ph of p.phases) {
      const x1 = ph.end === null ? p.now : ph.end;
      out.push({type: "rect", xref: "x", yref: "paper", x0: ph.start, x1, y0: 0, y1: 1,
                fillcolor: SHADES[ph.phase] || SHADES.drain, line: {width: 0}, layer: "below"});
      if (ph.phase === "warmup") {
        out.push({type: "line", xref: "x", yref: "paper", x0: ph.start, x1: ph.start, y0: 0,
                  y1: 1, line: {color: "rgba(127,127,127,0.7)", width: 1, dash: "dot"}});
      }
    }
    if (withUnsettled && p.now > p.settled) {
      out.push({type: "rect", xref: "x", yref: "paper", x0: Math.max(0, p.settled), x1: p.now,
                y0: 0, y1: 1, fillcolor: UNSETTLED, line: {width: 0}, layer: "below"});
    }
    return out;
  }

  function rungLabels(p) {
    return p.phases.filter((ph) => ph.phase === "measure").map((ph) => ({
      x: (ph.start + (ph.end === null ? p.now : ph.end)) / 2, y: 1, xref: "x", yref: "paper",
      yanchor: "top", showarrow: false, text: `C=${ph.users}`, font: {size: 11}}));
  }

  function traces(chart, p) {
    const line = (x, y, name, extra) => ({x, y, name, mode: "lines", ...extra});
    if (chart.id === "concurrency") {
      return [
        line(p.users.t, p.users.users, "users", {line: {shape: "hv"}}),
        line(p.client.t, p.client.in_flight, "in flight (now)"),
        line(p.series.t, p.series.achieved_concurrency, "achieved (settled)",
             {mode: "lines+markers", marker: {size: 4}}),
      ];
    }
    if (chart.id === "load") {
      return [line(p.client.t, p.client.cpu_max, "CPU %"),
              line(p.client.t, p.client.lag_p99_max_ms, "lag p99 ms", {yaxis: "y2"})];
    }
    // bins where no request started have no latency: the markers show which do
    return chart.series.map(([key, name]) => line(p.series.t, p.series[key], name,
      {mode: "lines+markers", marker: {size: 4}, connectgaps: true}));
  }

  function limits(p) {  // the report's limits for a load process, as dashed lines
    const at = (y, yref, colour) => ({type: "line", xref: "paper", x0: 0, x1: 1, yref,
                                      y0: y, y1: y, line: {color: colour, dash: "dash", width: 1}});
    return [at(p.load.cpu_limit, "y", "#1f77b4"), at(p.load.lag_limit_ms, "y2", "#ff7f0e")];
  }

  function layout(chart, p, colour) {
    const timeChart = !["concurrency", "load"].includes(chart.id);
    const out = {
      title: {text: chart.title, font: {size: 13}, x: 0.01, xanchor: "left"},
      margin: {t: 56, r: chart.id === "load" ? 56 : 12, b: 40, l: 56},
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: {color: colour},
      xaxis: {title: {text: "seconds since start"}, range: [0, Math.max(p.now, 1)],
              zeroline: false},
      yaxis: {title: {text: chart.y}, type: chart.log ? "log" : "linear",
              rangemode: chart.log ? "normal" : "tozero"},
      legend: {orientation: "h", x: 1, xanchor: "right", y: 1.0, yanchor: "bottom",
               font: {size: 11}},
      showlegend: chart.series.length !== 1,
      shapes: shapes(p, timeChart), annotations: chart.id === "concurrency" ? rungLabels(p) : [],
      uirevision: chart.id,
    };
    if (chart.id === "load") {
      out.yaxis2 = {title: {text: "lag ms"}, overlaying: "y", side: "right",
                    rangemode: "tozero"};
      out.shapes = out.shapes.concat(limits(p));
    }
    return out;
  }

  function showStatus(p) {
    const panel = view.panel;
    const badge = panel.querySelector(".sl-badge");
    const load = p && p.load ? p.load : {status: "unknown", message: "", processes: 0};
    const colours = {ok: "#2e7d32", lagging: "#ed6c02", saturated: "#d32f2f",
                     unknown: "#757575"};
    badge.style.background = colours[load.status] || colours.unknown;
    badge.textContent = `load ${load.status}`;
    panel.querySelector(".sl-load").textContent = load.processes ?
      `${load.processes} load process${load.processes > 1 ? "es" : ""}: ${load.message}` :
      load.message;
    let run = view.error || (p && p.error ? `live figures: ${p.error}` : "") ||
              (p && p.notice) || "";
    if (!run && p && p.ready) {
      const behind = Math.max(0, p.now - p.settled);
      run = `${p.state} · ${p.now.toFixed(0)} s · figures settled up to ` +
            `${Math.max(0, p.settled).toFixed(0)} s (${behind.toFixed(0)} s still in flight)`;
    }
    panel.querySelector(".sl-run").textContent = run || "waiting for a test to start";
    panel.querySelector(".sl-note").textContent = NOTE + (p && p.shares_loop ? SHARED : "");
  }

  async function refresh() {
    try {
      const response = await fetch("./specload/live", {cache: "no-store"});
      if (!response.ok) throw new Error(`GET specload/live: HTTP ${response.status}`);
      const p = await response.json();
      const Plotly = await loadPlotly();
      view.error = "";
      if (!view.panel) return;
      if (p.ready) {
        const colour = getComputedStyle(view.panel).color;
        for (const chart of CHARTS) {
          const div = document.getElementById(`specload-chart-${chart.id}`);
          await Plotly.react(div, traces(chart, p), layout(chart, p, colour),
                             {displayModeBar: false, responsive: true});
        }
      }
      view.payload = p;
      showStatus(p);
    } catch (err) {  // the web UI may be gone (Locust quit): say so, keep trying
      view.error = `live figures unavailable: ${err.message}`;
      if (view.panel) showStatus(view.payload);
    }
  }

  function poll(round) {
    refresh().finally(() => {
      if (view.polling === round) setTimeout(() => poll(round), POLL_MS);
    });
  }

  // Locust's page asks for the run's state only while a run is on (webui useSwarmUi polls
  // /stats/requests while SPAWNING or RUNNING, and only the worker count while READY), so
  // a page loaded while the runner was READY, as a master waiting for its workers before
  // --autostart is, would show the start form all through the run: reload it once the run
  // is under way. Runner states: locust/runners.py STATE_*.
  const UNDER_WAY = ["spawning", "running"];
  let watching = false;
  function watchForStart() {
    if (watching) return;
    watching = true;
    const check = async () => {
      if (document.querySelector('[role="tablist"]')) {
        watching = false;
        return;
      }
      try {
        const response = await fetch("./specload/live", {cache: "no-store"});
        const p = response.ok ? await response.json() : {};
        if (UNDER_WAY.includes(p.state) && !document.querySelector('[role="tablist"]')) {
          window.location.reload();
          return;
        }
      } catch (err) {}  // the web UI may be starting or gone: ask again
      setTimeout(check, POLL_MS);
    };
    setTimeout(check, POLL_MS);  // Locust's own bundle renders after this script runs
  }

  let rounds = 0;
  function place() {
    const open = new URLSearchParams(window.location.search).get("tab") === KEY;
    const tabs = document.querySelector('[role="tablist"]');
    const bar = tabs && (tabs.closest(".MuiTabs-root") || tabs).parentElement;
    if (!tabs) watchForStart();
    if (!open || !bar) {
      if (view.panel && view.panel.isConnected) view.panel.remove();
      view.polling = 0;  // a poll in flight finds its round over and stops
      return;
    }
    if (!view.panel) view.panel = buildPanel();
    if (bar.nextElementSibling !== view.panel) bar.after(view.panel);
    if (!view.polling) {
      view.polling = ++rounds;
      poll(view.polling);
    }
  }

  const root = document.getElementById("root") || document.body;
  new MutationObserver(place).observe(root, {childList: true, subtree: true});
  window.addEventListener("popstate", place);
  place();
})();
