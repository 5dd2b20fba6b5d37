// Ray dashboard: one page per view (hash routes), each polling only the API it shows.
// Plain JS, nothing downloaded. Every page sets body.dataset.page / .loaded / .loadMs
// (milliseconds from navigation to its first render) so a test can time it.
"use strict";

const REFRESH_MS = Number(new URLSearchParams(location.search).get("refresh_ms")) || 2000;
const state = { refreshes: 0, page: null, timer: null, generation: 0, logNode: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function getJSON(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(`${path}: ${body.error || body.msg || response.status}`);
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
const fmtMsTime = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "");
const fmtMs = (s) => (s < 0.001 ? `${(s * 1e6).toFixed(0)} µs` : s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`);
const short = (id) => (id ? String(id) : "");
const stateSpan = (s) => el("span", { class: `state-${s}` }, s);

function table(id, columns, rows, emptyText) {
  const t = document.getElementById(id);
  t.replaceChildren();
  if (!rows.length) {
    t.append(el("tr", {}, el("td", { class: "empty" }, emptyText || "none")));
    return;
  }
  t.append(el("tr", {}, columns.map(([title]) => el("th", {}, title))));
  const frag = document.createDocumentFragment();
  for (const row of rows) {
    frag.append(el("tr", {}, columns.map(([, fn, cls]) => el("td", cls ? { class: cls } : {}, fn(row)))));
  }
  t.append(frag);
}

function resourceBars(total, used) {
  return Object.keys(total).filter((n) => !n.includes("_group_")).sort().map((name) => {
    const frac = total[name] > 0 ? Math.min(1, (used[name] || 0) / total[name]) : 0;
    return el("div", {}, el("span", { class: "bar" }, el("i", { style: `width:${(frac * 100).toFixed(0)}%` })),
      `${name} ${+(used[name] || 0).toFixed(2)} / ${+total[name].toFixed(2)}`);
  });
}

function fracBar(used, total, text) {
  const frac = total > 0 ? Math.min(1, used / total) : 0;
  return el("div", {}, el("span", { class: "bar" }, el("i", { style: `width:${(frac * 100).toFixed(0)}%` })), text);
}

// -- overview ------------------------------------------------------------------------------
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

function renderRunning(tasks) {
  document.getElementById("running-count").textContent = `(${tasks.running.length})`;
  table("running-table", [
    ["Task", (t) => t.name], ["Task ID", (t) => short(t.task_id), "mono"],
    ["Worker", (t) => `${t.node_ip} pid ${t.pid}`], ["Actor", (t) => short(t.actor_id), "mono"],
  ], tasks.running, "nothing running");
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

async function loadOverview() {
  // The timeline draws the last N spans: ask for a few times that many events, not all.
  const spans = Math.max(1, Number(document.getElementById("timeline-count").value) || 200);
  const [summary, tasks, errors, trace] = await Promise.all([
    getJSON("/api/summary"), getJSON("/api/tasks?finished=0"), getJSON("/api/errors"),
    getJSON(`/api/timeline?limit=${Math.max(600, 4 * spans)}`),
  ]);
  renderSummary(summary); renderRunning(tasks); renderErrors(errors);
  state.trace = trace; drawTimeline(trace);
}

// -- jobs ----------------------------------------------------------------------------------
async function showJobLogs(id) {
  const view = document.getElementById("job-log-view");
  const body = await getJSON(`/api/jobs/${encodeURIComponent(id)}/logs`);
  view.hidden = false;
  view.textContent = `== ${id} ==\n${body.logs}`;
}

async function loadJobs() {
  let jobs;
  try { jobs = await getJSON("/api/jobs/"); } catch (err) { jobs = []; }
  document.getElementById("job-count").textContent = `(${jobs.length})`;
  table("jobs-table", [
    ["Submission", (j) => (j.submission_id
      ? el("button", { class: "link", onclick: () => showJobLogs(j.submission_id) }, j.submission_id) : ""), "mono"],
    ["Job ID", (j) => j.job_id || "", "mono"], ["Type", (j) => j.type],
    ["Status", (j) => stateSpan(j.status)], ["Entrypoint", (j) => j.entrypoint || ""],
    ["Started", (j) => fmtMsTime(j.start_time)], ["Ended", (j) => fmtMsTime(j.end_time)],
    ["Message", (j) => (j.message || "").split("\n")[0]],
  ], jobs, "no jobs");
}

// -- nodes ---------------------------------------------------------------------------------
async function loadNodes() {
  const nodes = await getJSON("/api/nodes");
  document.getElementById("node-count").textContent =
    `(${nodes.filter((n) => n.alive).length} alive, ${nodes.length} total)`;
  table("nodes-table", [
    ["Node", (n) => `${n.node_ip}${n.is_head ? " (head)" : ""}`],
    ["ID", (n) => String(n.node_id).slice(0, 12), "mono"],
    ["State", (n) => stateSpan(n.alive ? "ALIVE" : "DEAD")],
    ["Resources used / total", (n) => resourceBars(n.resources_total, n.resources_used)],
    ["Host CPU", (n) => (n.stats ? `${n.stats.cpu_percent.toFixed(0)} %` : "-")],
    ["Memory", (n) => (n.stats ? fracBar(n.stats.mem_used_bytes, n.stats.mem_total_bytes,
      `${fmtBytes(n.stats.mem_used_bytes)} / ${fmtBytes(n.stats.mem_total_bytes)}`) : "-")],
    ["Object store", (n) => (n.stats ? fracBar(n.stats.store_used_bytes, n.stats.store_capacity_bytes,
      `${fmtBytes(n.stats.store_used_bytes)} / ${fmtBytes(n.stats.store_capacity_bytes)}`) : "-")],
    ["Queued demand", (n) => (n.pending_demand.length ? JSON.stringify(n.pending_demand) : "-")],
    ["Heartbeat", (n) => (n.heartbeat_age_s === null ? "-" : `${n.heartbeat_age_s.toFixed(1)} s ago`)],
  ], nodes, "no nodes");
}

// -- actors --------------------------------------------------------------------------------
async function loadActors() {
  const actors = await getJSON("/api/actors");
  const counts = {};
  for (const a of actors) counts[a.state] = (counts[a.state] || 0) + 1;
  document.getElementById("actor-counts").textContent =
    `(${actors.length}: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ") || "none"})`;
  table("actors-table", [
    ["Class", (a) => a.class_name || "?"], ["Name", (a) => a.name || ""],
    ["State", (a) => stateSpan(a.state)], ["Actor ID", (a) => short(a.actor_id), "mono"],
    ["Address", (a) => a.address || ""], ["Restarts", (a) => `${a.num_restarts || 0} / ${a.max_restarts ?? 0}`],
    ["Job", (a) => a.job_id || ""], ["Death cause", (a) => a.death_cause || ""],
  ], actors, "no actors");
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

// -- tasks ---------------------------------------------------------------------------------
const TASK_STATES = ["PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT", "RUNNING", "FINISHED", "FAILED"];

function taskQuery() {
  const params = routeParams();
  return { state: params.get("state") || "", q: params.get("q") || "" };
}

function renderTaskDetail(t) {
  const box = document.getElementById("task-detail");
  if (!t) { box.hidden = true; box.replaceChildren(); return; }
  const rows = [["Task ID", t.task_id], ["Name", t.name], ["State", t.state], ["Type", t.type],
    ["Job", t.job_id], ["Actor", t.actor_id || "-"], ["Node", t.node_id || "-"],
    ["Worker pid", t.worker_pid || "-"], ["Attempt", t.attempt_number],
    ["Created", fmtMsTime(t.creation_time_ms)], ["Started", fmtMsTime(t.start_time_ms)],
    ["Ended", fmtMsTime(t.end_time_ms)], ["Ran for", t.duration_s === null ? "-" : fmtMs(t.duration_s)],
    ["Error", t.error_type ? `${t.error_type}: ${t.error_message || ""}` : "-"],
    ["Events", (t.events || []).map((e) => `${e.state} ${fmtMsTime(e.created_ms)}`).join(" → ")]];
  if (t.object_id) rows.unshift(["Object", `${t.object_id} (a return value of this task)`]);
  box.hidden = false;
  box.replaceChildren(el("div", { class: "detail", id: "task-detail-card" },
    el("dl", {}, rows.map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]))));
}

async function loadTasks() {
  const { state: wanted, q } = taskQuery();
  document.getElementById("task-state").value = wanted;
  if (document.activeElement !== document.getElementById("task-search")) {
    document.getElementById("task-search").value = q;
  }
  const page = await getJSON(`/api/tasks/page?state=${encodeURIComponent(wanted)}&q=${encodeURIComponent(q)}&limit=200`);
  document.getElementById("task-total").textContent = `(${page.total} recorded)`;
  document.getElementById("task-matched").textContent =
    `${page.matched} match${page.matched === 1 ? "" : "es"}${page.matched > page.rows.length ? `, newest ${page.rows.length} shown` : ""}`;
  const chips = document.getElementById("task-counts");
  chips.replaceChildren(...TASK_STATES.map((s) => el("button", {
    class: `chip${s === wanted ? " on" : ""}`, "data-state": s, "data-count": String(page.counts[s] || 0),
    onclick: () => navigate("tasks", { state: s === wanted ? "" : s, q }),
  }, `${s} ${page.counts[s] || 0}`)));
  renderTaskDetail(page.lookup);
  table("tasks-table", [
    ["Task ID", (t) => el("button", { class: "link mono", onclick: () => navigate("tasks", { state: "", q: t.task_id }) }, t.task_id)],
    ["Name", (t) => t.name], ["State", (t) => stateSpan(t.state)], ["Type", (t) => t.type],
    ["Node", (t) => (t.node_id ? t.node_id.slice(0, 8) : ""), "mono"], ["PID", (t) => t.worker_pid || ""],
    ["Ran for", (t) => (t.duration_s === null ? "" : fmtMs(t.duration_s))],
    ["Ended", (t) => fmtMsTime(t.end_time_ms)], ["Error", (t) => t.error_type || ""],
  ], page.rows, wanted || q ? "no task matches" : "no tasks recorded yet");
}

function setupTaskForm() {
  const select = document.getElementById("task-state");
  for (const s of TASK_STATES) select.append(el("option", { value: s }, s));
  document.getElementById("task-form").addEventListener("submit", (event) => {
    event.preventDefault();
    navigate("tasks", { state: select.value, q: document.getElementById("task-search").value.trim() });
  });
  select.addEventListener("change", () =>
    navigate("tasks", { state: select.value, q: document.getElementById("task-search").value.trim() }));
}

// -- metrics -------------------------------------------------------------------------------
function prepCanvas(canvas, width, height) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = width * ratio; canvas.height = height * ratio;
  canvas.style.width = `${width}px`; canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  return ctx;
}

function lineChart(title, t, lines, yMax, fmtY) {
  const W = 320, H = 140, L = 52, B = 18;
  const canvas = el("canvas", { class: "series" });
  const ctx = prepCanvas(canvas, W, H);
  const t0 = t.length ? t[0] : 0, t1 = t.length ? Math.max(t[t.length - 1], t0 + 1) : 1;
  const x = (v) => L + ((v - t0) / (t1 - t0)) * (W - L - 6);
  const top = yMax > 0 ? yMax : 1;
  const y = (v) => H - B - (v / top) * (H - B - 8);
  ctx.strokeStyle = "#dde2e8"; ctx.fillStyle = "#667";
  for (let i = 0; i <= 2; i++) {
    const v = (top * i) / 2;
    ctx.beginPath(); ctx.moveTo(L, y(v)); ctx.lineTo(W - 6, y(v)); ctx.stroke();
    ctx.fillText(fmtY(v), 2, y(v) + 4);
  }
  ctx.fillText(t.length ? `${Math.round(t1 - t0)} s` : "no samples yet", L, H - 4);
  let points = 0;
  for (const [values, color] of lines) {
    ctx.strokeStyle = color; ctx.lineWidth = 1.5; ctx.beginPath();
    values.forEach((v, i) => { if (i === 0) ctx.moveTo(x(t[i]), y(v)); else ctx.lineTo(x(t[i]), y(v)); });
    ctx.stroke(); points += values.length;
  }
  canvas.dataset.points = String(points);
  return el("div", { class: "chart" }, el("div", { class: "title" }, title), canvas);
}

function drawHistogram(h) {
  const canvas = document.getElementById("histogram-canvas");
  const W = Math.max(500, canvas.parentElement.clientWidth - 30), H = 220, L = 46, B = 34;
  const ctx = prepCanvas(canvas, W, H);
  document.getElementById("histogram-total").textContent = `(${h.total} tasks)`;
  canvas.dataset.total = String(h.total);
  if (!h.total) { ctx.fillStyle = "#889"; ctx.fillText("no finished tasks recorded yet", 10, 30); return; }
  const maxCount = Math.max(...h.counts), bw = (W - L - 10) / h.counts.length;
  ctx.fillStyle = "#667";
  ctx.fillText(String(maxCount), 4, 14); ctx.fillText("0", 4, H - B);
  h.counts.forEach((c, i) => {
    const bh = (c / maxCount) * (H - B - 12);
    ctx.fillStyle = "#3b7dd8"; ctx.fillRect(L + i * bw + 1, H - B - bh, bw - 2, bh);
    if (i % 4 === 0) { ctx.fillStyle = "#667"; ctx.fillText(fmtMs(h.edges_s[i]), L + i * bw, H - B + 14); }
  });
  ctx.fillStyle = "#667"; ctx.fillText(fmtMs(h.edges_s[h.edges_s.length - 1]), W - 60, H - B + 14);
  ctx.fillText("run time (log scale)", L, H - 4);
}

function drawHeatMap(m) {
  const canvas = document.getElementById("heatmap-canvas");
  const W = Math.max(500, canvas.parentElement.clientWidth - 30), LW = 170, RH = 22;
  const H = 20 + Math.max(1, m.rows.length) * RH;
  const ctx = prepCanvas(canvas, W, H);
  canvas.dataset.rows = String(m.rows.length);
  let cells = 0, peak = 0;
  for (const line of m.values) for (const v of line) peak = Math.max(peak, v);
  if (!m.rows.length) { ctx.fillStyle = "#889"; ctx.fillText("no task ran in this window", 10, 16); canvas.dataset.cells = "0"; return; }
  const cw = (W - LW - 6) / m.values[0].length;
  m.rows.forEach((row, r) => {
    ctx.fillStyle = "#334"; ctx.fillText(row, 4, 20 + r * RH + 15);
    m.values[r].forEach((v, k) => {
      if (v > 0) cells++;
      const a = peak > 0 ? v / peak : 0;
      ctx.fillStyle = v > 0 ? `rgba(214, 69, 30, ${0.15 + 0.85 * a})` : "#f2f4f7";
      ctx.fillRect(LW + k * cw, 20 + r * RH, Math.max(1, cw - 1), RH - 2);
    });
  });
  ctx.fillStyle = "#667";
  ctx.fillText(fmtTime(m.t0), LW, 12);
  ctx.fillText(fmtTime(m.t0 + m.bin_s * m.values[0].length), W - 80, 12);
  canvas.dataset.cells = String(cells);
  document.getElementById("heatmap-info").textContent =
    `${m.rows.length} node(s), ${m.values[0].length} bins of ${m.bin_s.toFixed(2)} s; darkest = ${peak.toFixed(1)} tasks running`;
}

async function loadMetrics() {
  const windowS = document.getElementById("metric-window").value;
  const m = await getJSON(`/api/metrics?window_s=${windowS}`);
  const box = document.getElementById("metric-charts");
  box.replaceChildren(...m.nodes.filter((n) => n.alive).map((n) => {
    const s = n.series;
    const memTotal = Math.max(1, ...s.mem_total_bytes), storeTotal = Math.max(1, ...s.store_capacity_bytes);
    return el("div", { class: "node-charts", "data-node": n.node_id },
      el("h3", {}, `${n.node_ip} · ${n.node_id.slice(0, 12)}`),
      lineChart("busy CPUs (blue) / host CPU % of cores (grey)", s.t,
        [[s.cpu_percent.map((p, i) => (p / 100) * (s.num_cpus[i] || 1)), "#9aa4b0"], [s.cpus_busy, "#3b7dd8"]],
        Math.max(1, ...s.num_cpus), (v) => v.toFixed(1)),
      lineChart("memory used", s.t, [[s.mem_used_bytes, "#8e44ad"]], memTotal, fmtBytes),
      lineChart("object store used", s.t, [[s.store_used_bytes, "#2e8b57"]], storeTotal, fmtBytes));
  }));
  drawHistogram(m.histogram);
  drawHeatMap(m.heat_map);
}

// -- logs ----------------------------------------------------------------------------------
function renderWorkerLogs(logs) {
  const list = document.getElementById("logs-list");
  list.replaceChildren();
  if (!logs.length) { list.append(el("p", { class: "empty" }, "no worker output yet")); return; }
  for (const w of logs) {
    const pre = el("pre", {}, w.lines.slice(-100).map(([, stream, line]) =>
      el("span", { class: stream }, line + "\n")));
    list.append(el("div", { class: "log" }, el("b", {}, `${w.name || "worker"} `), `${w.node_ip} pid ${w.pid}`, pre));
  }
}

async function showLogFile(nodeId, name) {
  const view = document.getElementById("log-file-view");
  const response = await fetch(`/api/v0/logs/file?node_id=${encodeURIComponent(nodeId)}&filename=${encodeURIComponent(name)}&lines=1000`);
  view.hidden = false;
  view.textContent = `== ${name} ==\n` + (await response.text());
}

async function loadLogs() {
  const [logs, nodes] = await Promise.all([getJSON("/api/logs"), getJSON("/api/nodes")]);
  renderWorkerLogs(logs);
  const select = document.getElementById("log-node");
  const alive = nodes.filter((n) => n.alive);
  if (select.options.length !== alive.length) {
    select.replaceChildren(...alive.map((n) => el("option", { value: n.node_id }, `${n.node_ip} ${n.node_id.slice(0, 8)}`)));
  }
  state.logNode = select.value || (alive[0] && alive[0].node_id);
  const box = document.getElementById("log-files");
  if (!state.logNode) { box.replaceChildren(el("p", { class: "empty" }, "no nodes")); return; }
  let groups;
  try { groups = (await getJSON(`/api/v0/logs?node_id=${state.logNode}`)).data.result; }
  catch (err) { box.replaceChildren(el("p", { class: "empty" }, err.message)); return; }
  box.replaceChildren(...Object.entries(groups).sort().map(([group, files]) => el("div", {},
    el("b", {}, `${group}: `), files.map((name) =>
      [el("button", { class: "link", onclick: () => showLogFile(state.logNode, name) }, name), " "]))));
}

// -- routing and polling -------------------------------------------------------------------
const PAGES = { overview: loadOverview, jobs: loadJobs, nodes: loadNodes, actors: loadActors,
  tasks: loadTasks, metrics: loadMetrics, logs: loadLogs };

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name] = hash.split("?");
  return PAGES[name] ? name : "overview";
}

function routeParams() {
  const hash = location.hash.replace(/^#\/?/, "");
  return new URLSearchParams(hash.includes("?") ? hash.slice(hash.indexOf("?") + 1) : "");
}

function navigate(page, params) {
  const query = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v)).toString();
  location.hash = `#/${page}${query ? `?${query}` : ""}`;
}

async function refresh(generation, started) {
  const status = document.getElementById("status");
  const page = state.page;
  try {
    await PAGES[page]();
    if (generation !== state.generation) return;  // the user moved on meanwhile
    state.refreshes += 1;
    if (document.body.dataset.loaded !== "1") {
      document.body.dataset.loadMs = String(Math.round(performance.now() - started));
      // performance.now() counts from the navigation's start: the whole load, as a user waits
      document.body.dataset.navMs = String(Math.round(performance.now()));
      document.body.dataset.loaded = "1";
    }
    status.className = "status live";
    status.textContent = `live · updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.refreshes = String(state.refreshes);
  } catch (err) {
    if (generation !== state.generation) return;
    status.className = "status down";
    status.textContent = `cannot reach the cluster: ${err.message}`;
  }
  state.timer = setTimeout(() => refresh(generation, started), REFRESH_MS);
}

function show() {
  const started = performance.now();
  clearTimeout(state.timer);
  state.generation += 1;
  state.page = route();
  document.body.dataset.page = state.page;
  document.body.dataset.loaded = "0";
  for (const node of document.querySelectorAll(".page")) node.hidden = node.id !== `page-${state.page}`;
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("active", link.dataset.page === state.page);
  refresh(state.generation, started);
}

setupTooltip();
setupTaskForm();
document.getElementById("metric-window").addEventListener("change", show);
document.getElementById("log-node").addEventListener("change", show);
window.addEventListener("hashchange", show);
show();
