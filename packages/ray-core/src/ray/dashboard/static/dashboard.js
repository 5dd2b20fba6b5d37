// Ray dashboard: polls /api/* and renders tables and a canvas timeline. Plain JS.
"use strict";

const REFRESH_MS = Number(new URLSearchParams(location.search).get("refresh_ms")) || 2000;
const state = { refreshes: 0, logFilesShown: false };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function getJSON(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(`${path}: ${body.error || response.status}`);
  return body;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
const fmtTime = (s) => (s ? new Date(s * 1000).toLocaleTimeString() : "");
const fmtMs = (s) => (s < 0.001 ? `${(s * 1e6).toFixed(0)} µs` : `${(s * 1000).toFixed(1)} ms`);
const short = (id) => (id ? String(id) : "");

function table(id, columns, rows, emptyText) {
  const t = document.getElementById(id);
  t.replaceChildren();
  if (!rows.length) {
    t.append(el("tr", {}, el("td", { class: "empty" }, emptyText || "none")));
    return;
  }
  t.append(el("tr", {}, columns.map(([title]) => el("th", {}, title))));
  for (const row of rows) {
    t.append(el("tr", {}, columns.map(([, fn, cls]) => el("td", cls ? { class: cls } : {}, fn(row)))));
  }
}

function resourceBars(total, used) {
  return Object.keys(total).sort().map((name) => {
    const frac = total[name] > 0 ? Math.min(1, (used[name] || 0) / total[name]) : 0;
    return el("div", {}, el("span", { class: "bar" }, el("i", { style: `width:${(frac * 100).toFixed(0)}%` })),
      `${name} ${+(used[name] || 0).toFixed(2)} / ${+total[name].toFixed(2)}`);
  });
}

function renderSummary(s) {
  const cards = [
    ["Nodes alive", s.nodes_alive], ["Actors alive", s.actors_alive],
    ["CPUs", `${+((s.cluster_resources.CPU || 0) - (s.available_resources.CPU || 0)).toFixed(2)} / ${s.cluster_resources.CPU || 0} used`],
    ["Host CPU", `${s.host.cpu_percent.toFixed(0)} % of ${s.host.cpu_count}`],
    ["Host memory", `${fmtBytes(s.host.memory_used_bytes)} / ${fmtBytes(s.host.memory_total_bytes)}`],
    ["Load", s.host.load_avg.map((x) => x.toFixed(2)).join(" ")],
  ];
  document.getElementById("summary").replaceChildren(
    ...cards.map(([k, v]) => el("div", { class: "card" }, k, el("b", {}, v))));
}

function renderNodes(nodes) {
  table("nodes-table", [
    ["Node", (n) => `${n.node_ip}${n.is_head ? " (head)" : ""}`],
    ["ID", (n) => String(n.node_id).slice(0, 12), "mono"],
    ["State", (n) => el("span", { class: n.alive ? "state-ALIVE" : "state-DEAD" }, n.alive ? "ALIVE" : "DEAD")],
    ["Resources used / total", (n) => resourceBars(n.resources_total, n.resources_used)],
    ["Queued demand", (n) => (n.pending_demand.length ? JSON.stringify(n.pending_demand) : "-")],
    ["Heartbeat", (n) => (n.heartbeat_age_s === null ? "-" : `${n.heartbeat_age_s.toFixed(1)} s ago`)],
  ], nodes, "no nodes");
}

function renderActors(actors) {
  table("actors-table", [
    ["Class", (a) => a.class_name || "?"],
    ["Name", (a) => a.name || ""],
    ["State", (a) => el("span", { class: `state-${a.state}` }, a.state)],
    ["Actor ID", (a) => short(a.actor_id), "mono"],
    ["Address", (a) => a.address || ""],
    ["PID", (a) => a.pid || ""],
    ["Restarts", (a) => `${a.num_restarts || 0} / ${a.max_restarts ?? 0}`],
    ["Job", (a) => a.job_id || ""],
    ["Death cause", (a) => a.death_cause || ""],
  ], actors, "no actors");
}

function renderTasks(tasks) {
  document.getElementById("running-count").textContent = `(${tasks.running.length})`;
  document.getElementById("finished-count").textContent = `(${tasks.finished.length} shown)`;
  table("running-table", [
    ["Task", (t) => t.name], ["Task ID", (t) => short(t.task_id), "mono"],
    ["Worker", (t) => `${t.node_ip} pid ${t.pid}`], ["Actor", (t) => short(t.actor_id), "mono"],
  ], tasks.running, "nothing running");
  table("finished-table", [
    ["Task", (t) => t.FunctionName], ["Task ID", (t) => short(t.TaskID), "mono"],
    ["Worker", (t) => `${t.NodeIP} pid ${t.WorkerPid}`],
    ["Queued", (t) => (t.SubmitTime ? fmtMs(t.StartTime - t.SubmitTime) : "")],
    ["Ran", (t) => fmtMs(t.EndTime - t.StartTime)], ["Finished", (t) => fmtTime(t.EndTime)],
  ], tasks.finished, "no finished tasks recorded yet");
}

function renderErrors(errors) {
  document.getElementById("error-count").textContent = `(${errors.length})`;
  const list = document.getElementById("errors-list");
  list.replaceChildren();
  if (!errors.length) { list.append(el("p", { class: "empty" }, "no errors")); return; }
  for (const e of errors.slice(-50).reverse()) {
    list.append(el("div", { class: "error" },
      el("b", {}, `${e.name || e.type} `), `job ${e.job_id} · ${e.ip || ""} pid ${e.pid || ""} · ${fmtTime(e.time)}`,
      el("pre", {}, e.message || "")));
  }
}

function renderLogs(logs) {
  const list = document.getElementById("logs-list");
  list.replaceChildren();
  if (!logs.length) { list.append(el("p", { class: "empty" }, "no worker output yet")); return; }
  for (const w of logs) {
    const pre = el("pre", {}, w.lines.slice(-100).map(([, stream, line]) =>
      el("span", { class: stream }, line + "\n")));
    list.append(el("div", { class: "log" }, el("b", {}, `${w.name || "worker"} `), `${w.node_ip} pid ${w.pid}`, pre));
  }
}

async function showLogFile(name) {
  const view = document.getElementById("log-file-view");
  const response = await fetch(`/api/logs/file?name=${encodeURIComponent(name)}`);
  view.hidden = false;
  view.textContent = `== ${name} ==\n` + (await response.text());
}

function renderLogFiles(files) {
  const box = document.getElementById("log-files");
  box.replaceChildren(...(files.length ? files.map((f) => el("div", {},
    el("button", { class: "link", onclick: () => showLogFile(f.name) }, f.name), ` ${fmtBytes(f.size_bytes)}`))
    : [el("p", { class: "empty" }, "no log files")]));
}

// -- timeline ------------------------------------------------------------------------------
const LABEL_W = 170, ROW_H = 22, AXIS_H = 20;

function colorFor(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360}, 55%, 62%)`;
}

function layoutTimeline(trace) {
  const names = {}, threads = {};
  const spans = [], sched = {}, flows = {};
  for (const ev of trace) {
    if (ev.ph === "M" && ev.name === "process_name") names[ev.pid] = ev.args.name;
    else if (ev.ph === "M" && ev.name === "thread_name") threads[`${ev.pid}/${ev.tid}`] = ev.args.name;
    else if (ev.ph === "X") spans.push(ev);
    else if (ev.ph === "b" || ev.ph === "e") (sched[ev.id] = sched[ev.id] || {})[ev.ph] = ev;
    else if (ev.ph === "s" || ev.ph === "f") (flows[ev.id] = flows[ev.id] || {})[ev.ph] = ev;
  }
  // Like the 0.2 UI: show the last N spans (by end time) and the time they cover.
  const count = Math.max(1, Number(document.getElementById("timeline-count").value) || 200);
  spans.sort((a, b) => a.ts + a.dur - (b.ts + b.dur));
  const shown = spans.slice(-count);
  let t0 = Infinity, t1 = -Infinity;
  for (const s of shown) { t0 = Math.min(t0, s.ts); t1 = Math.max(t1, s.ts + s.dur); }
  const inWindow = (a, b) => b >= t0 && a <= t1;
  const schedShown = Object.values(sched).filter((p) => p.b && p.e && inWindow(p.b.ts, p.e.ts));
  const flowsShown = Object.values(flows).filter((p) => p.s && p.f && inWindow(p.s.ts, p.f.ts));
  for (const p of schedShown) t0 = Math.min(t0, p.b.ts);
  const rowKeys = shown.map((s) => `${s.pid}/${s.tid}`);
  for (const p of schedShown) rowKeys.push(`${p.b.pid}/${p.b.tid}`);
  for (const p of flowsShown) rowKeys.push(`${p.s.pid}/${p.s.tid}`, `${p.f.pid}/${p.f.tid}`);
  const rows = [...new Set(rowKeys)].sort();
  const label = (key) => `${names[key.split("/")[0]] || ""} · ${threads[key] || key}`;
  return { rows, label, spans: shown, total: spans.length, sched: schedShown, flows: flowsShown, t0, t1 };
}

function drawTimeline(trace) {
  const canvas = document.getElementById("timeline-canvas");
  const info = document.getElementById("timeline-info");
  const L = layoutTimeline(trace);
  const width = Math.max(600, document.getElementById("timeline-wrap").clientWidth - 4);
  const height = AXIS_H + Math.max(1, L.rows.length) * ROW_H + 6;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = width * ratio; canvas.height = height * ratio;
  canvas.style.width = `${width}px`; canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  if (!L.spans.length) {
    ctx.fillStyle = "#889";
    ctx.fillText("no task executions recorded yet", 10, 30);
    canvas.dataset.drawnSpans = "0";
    info.textContent = "0 spans";
    state.hits = [];
    return;
  }
  const span = Math.max(1, L.t1 - L.t0);
  const x = (ts) => LABEL_W + ((ts - L.t0) / span) * (width - LABEL_W - 10);
  const rowIndex = Object.fromEntries(L.rows.map((k, i) => [k, i]));
  const y = (key) => AXIS_H + rowIndex[key] * ROW_H;
  ctx.fillStyle = "#334";
  for (const key of L.rows) {
    ctx.fillStyle = rowIndex[key] % 2 ? "#fafbfc" : "#f2f4f7";
    ctx.fillRect(0, y(key), width, ROW_H);
    ctx.fillStyle = "#334";
    ctx.fillText(L.label(key).slice(0, 30), 4, y(key) + 15);
  }
  ctx.fillStyle = "#667";
  for (let i = 0; i <= 4; i++) {
    const ts = L.t0 + (span * i) / 4;
    ctx.fillText(`+${((ts - L.t0) / 1000).toFixed(1)} ms`, x(ts) - (i === 4 ? 50 : 0), 12);
  }
  ctx.globalAlpha = 0.35; ctx.fillStyle = "#808890";
  for (const p of L.sched) {
    const key = `${p.b.pid}/${p.b.tid}`;
    ctx.fillRect(x(p.b.ts), y(key) + 2, Math.max(1, x(p.e.ts) - x(p.b.ts)), 3);
  }
  ctx.globalAlpha = 1;
  state.hits = [];
  for (const s of L.spans) {
    const key = `${s.pid}/${s.tid}`, x0 = x(s.ts), w = Math.max(1, x(s.ts + s.dur) - x0);
    ctx.fillStyle = s.cname ? s.cname : colorFor(s.name);
    ctx.fillRect(x0, y(key) + 6, w, ROW_H - 9);
    state.hits.push({ x0, x1: x0 + w, y0: y(key), y1: y(key) + ROW_H, s });
  }
  ctx.strokeStyle = "#1d2a3a"; ctx.fillStyle = "#1d2a3a"; ctx.lineWidth = 1;
  for (const p of L.flows) {
    const ax = x(p.s.ts), ay = y(`${p.s.pid}/${p.s.tid}`) + ROW_H / 2;
    const bx = x(p.f.ts), by = y(`${p.f.pid}/${p.f.tid}`) + ROW_H / 2;
    ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by); ctx.stroke();
    const angle = Math.atan2(by - ay, bx - ax);
    ctx.beginPath(); ctx.moveTo(bx, by);
    ctx.lineTo(bx - 6 * Math.cos(angle - 0.4), by - 6 * Math.sin(angle - 0.4));
    ctx.lineTo(bx - 6 * Math.cos(angle + 0.4), by - 6 * Math.sin(angle + 0.4));
    ctx.closePath(); ctx.fill();
  }
  canvas.dataset.drawnSpans = String(L.spans.length);
  canvas.dataset.drawnArrows = String(L.flows.length);
  info.textContent = `${L.spans.length} of ${L.total} spans, ${L.sched.length} scheduling phases, ` +
    `${L.flows.length} dependency arrows over ${((L.t1 - L.t0) / 1000).toFixed(1)} ms`;
}

function setupTooltip() {
  const canvas = document.getElementById("timeline-canvas");
  const tip = document.getElementById("timeline-tip");
  canvas.addEventListener("mousemove", (event) => {
    const r = canvas.getBoundingClientRect();
    const mx = event.clientX - r.left, my = event.clientY - r.top;
    const hit = (state.hits || []).find((h) => mx >= h.x0 && mx <= h.x1 && my >= h.y0 && my <= h.y1);
    if (!hit) { tip.hidden = true; return; }
    const args = hit.s.args || {};
    tip.textContent = `${hit.s.name}\n${hit.s.cat} · ${(hit.s.dur / 1000).toFixed(2)} ms` +
      (args.task_id ? `\ntask ${short(args.task_id)}` : "");
    tip.style.left = `${mx + 12}px`; tip.style.top = `${my + 12}px`; tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  document.getElementById("timeline-count").addEventListener("change", () => {
    if (state.trace) drawTimeline(state.trace);
  });
}

// -- polling ------------------------------------------------------------------------------
async function refresh() {
  const status = document.getElementById("status");
  try {
    const [summary, nodes, actors, tasks, errors, logs, trace] = await Promise.all([
      getJSON("/api/summary"), getJSON("/api/nodes"), getJSON("/api/actors"), getJSON("/api/tasks"),
      getJSON("/api/errors"), getJSON("/api/logs"), getJSON("/api/timeline"),
    ]);
    renderSummary(summary); renderNodes(nodes); renderActors(actors); renderTasks(tasks);
    renderErrors(errors); renderLogs(logs); state.trace = trace; drawTimeline(trace);
    if (!state.logFilesShown || state.refreshes % 10 === 0) {
      renderLogFiles(await getJSON("/api/logs/files"));
      state.logFilesShown = true;
    }
    state.refreshes += 1;
    status.className = "status live";
    status.textContent = `live · updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.refreshes = String(state.refreshes);
  } catch (err) {
    status.className = "status down";
    status.textContent = `cannot reach the cluster: ${err.message}`;
  }
  setTimeout(refresh, REFRESH_MS);
}

setupTooltip();
refresh();
