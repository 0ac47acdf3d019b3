// The dashboard: fetches the overview and the last hour from the same
// listener every five seconds and draws them. Reads only; no dependencies.
"use strict";

const NS = 1e9;

function text(value) {
  return document.createTextNode(value === undefined || value === null ? "" : String(value));
}

function cell(value, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.appendChild(text(value));
  return td;
}

// Replaces a table's body with one row per item, or one saying there is none.
function fill(id, items, row, none) {
  const body = document.querySelector("#" + id + " tbody");
  body.textContent = "";
  if (items.length === 0) {
    const tr = document.createElement("tr");
    const td = cell(none, "empty");
    td.colSpan = document.querySelectorAll("#" + id + " thead th").length;
    tr.appendChild(td);
    body.appendChild(tr);
    return;
  }
  for (const item of items) {
    const tr = document.createElement("tr");
    tr.dataset.key = item.id || item.name || item.node || item.lease || "";
    for (const td of row(item)) tr.appendChild(td);
    body.appendChild(tr);
  }
}

function ago(ns, now) {
  if (!ns) return "";
  const s = Math.max(0, Math.round((now - ns) / NS));
  if (s < 120) return s + " s ago";
  if (s < 7200) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

function span(fromNs, toNs) {
  if (!fromNs || !toNs || toNs < fromNs) return "";
  const s = (toNs - fromNs) / NS;
  return s < 120 ? s.toFixed(1) + " s" : Math.round(s / 60) + " min";
}

function until(ns, now) {
  if (!ns) return "";
  const days = (ns - now) / NS / 86400;
  return days < 0 ? "expired" : days < 2 ? Math.round(days * 24) + " h" : Math.round(days) + " days";
}

function gib(bytes) {
  return (bytes / 1073741824).toFixed(1) + " GiB";
}

// A link to a GitHub page, shown as text; only an http(s) address becomes
// a link (a job's strings come from GitHub and are never markup).
function linkCell(label, url, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  if (/^https?:\/\//.test(url || "")) {
    const a = document.createElement("a");
    a.href = url;
    a.rel = "noopener noreferrer";
    a.appendChild(text(label));
    td.appendChild(a);
  } else {
    td.appendChild(text(label));
  }
  return td;
}

function duration(ns) {
  const s = Math.max(0, Math.round(ns / NS));
  return s < 120 ? s + " s" : s < 7200 ? Math.round(s / 60) + " min" : Math.round(s / 3600) + " h";
}

function session(s, now) {
  if (s.session === "open") return "open";
  return "down for " + duration(now - s.session_down_since_ns) + (s.session_error ? ": " + s.session_error : "");
}

function short(id) {
  return id ? id.slice(0, 12) : "";
}

// Draws series (arrays of [t, value]) over the span [t0, t1] as polylines
// in an SVG of 600x160.
function plot(id, series, unit, t0, t1) {
  const svg = document.getElementById(id);
  svg.textContent = "";
  const points = series.flatMap((s) => s.points);
  const ns = "http://www.w3.org/2000/svg";
  const line = (x1, y1, x2, y2) => {
    const l = document.createElementNS(ns, "line");
    Object.entries({ x1, y1, x2, y2, class: "axis" }).forEach(([k, v]) => l.setAttribute(k, v));
    svg.appendChild(l);
  };
  const label = (x, y, value) => {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", x);
    t.setAttribute("y", y);
    t.appendChild(text(value));
    svg.appendChild(t);
  };
  line(40, 140, 590, 140);
  line(40, 10, 40, 140);
  if (points.length === 0) {
    label(250, 80, "no samples yet");
    return;
  }
  t1 = Math.max(t1, t0 + NS);
  const top = Math.max(...points.map((p) => p[1]), 1e-9);
  label(2, 14, top < 1 && unit === "s" ? (top * 1000).toFixed(1) + " ms" : top.toFixed(top < 10 ? 1 : 0) + (unit === "s" ? " s" : ""));
  label(2, 140, "0");
  const width = (t1 - t0) / NS;
  label(40, 155, width < 120 ? "the last " + Math.round(width) + " s" : "the last " + Math.round(width / 60) + " min");
  const x = (t) => (40 + (550 * (t - t0)) / (t1 - t0)).toFixed(1);
  const y = (v) => (140 - (130 * v) / top).toFixed(1);
  for (const s of series) {
    const poly = document.createElementNS(ns, "polyline");
    poly.setAttribute("class", s.className);
    poly.setAttribute("points", s.points.map((p) => x(p[0]) + "," + y(p[1])).join(" "));
    svg.appendChild(poly);
    for (const p of s.points) {  // a lone sample shows as a dot
      const dot = document.createElementNS(ns, "circle");
      Object.entries({ cx: x(p[0]), cy: y(p[1]), r: 1.8, class: s.className }).forEach(([k, v]) => dot.setAttribute(k, v));
      svg.appendChild(dot);
    }
  }
}

async function refresh() {
  try {
    const [overview, history] = await Promise.all([
      fetch("/api/overview").then((r) => r.json()),
      fetch("/api/history").then((r) => r.json()),
    ]);
    const now = overview.now_ns;
    document.getElementById("deployment").textContent = overview.deployment + " · " + overview.version;
    // A paused tier launches nothing until an operator resumes it: first thing seen.
    document.getElementById("paused").textContent = (overview.paused_tiers || []).map((t) =>
      "Tier " + t.tier + " is paused: " + t.why + ". Make its image current, then: nodeplanectl tiers resume " +
      t.tier).join(" ");
    const live = overview.nodes.filter((n) => n.state === "live").length;
    document.getElementById("summary").textContent =
      live + " of " + overview.nodes.length + " nodes live · " + overview.leases.length + " open leases · " +
      overview.enrollments.length + " enrollments waiting";
    const states = {};
    for (const j of overview.github_jobs) states[j.state] = (states[j.state] || 0) + 1;
    document.getElementById("github-summary").textContent =
      ["waiting", "running", "finished"].filter((k) => states[k]).map((k) => states[k] + " " + k).join(" · ") ||
      "no GitHub job in the last day";
    fill("github-jobs", overview.github_jobs, (j) => [
      cell(j.state, "state-" + j.state), linkCell(j.job || j.job_id, j.link), cell(j.repository), cell(j.tier),
      cell(j.why, "reason-" + j.reason), cell(j.for_s ? duration(j.for_s * NS) : ""), cell(j.node, "mono"),
    ], "no GitHub job in the last day");
    fill("scale-sets", overview.scale_sets, (s) => [
      cell(s.tier), cell(s.scale_set + (s.scale_set_id ? " (#" + s.scale_set_id + ")" : "")),
      cell(session(s, now), "session-" + s.session),
      cell(s.github.available_jobs + " / " + s.github.acquired_jobs + " / " + s.github.assigned_jobs + " / " +
        s.github.running_jobs),
      cell(s.github.registered_runners + " / " + s.github.busy_runners + " / " + s.github.idle_runners),
      cell(s.runners + " / " + s.wanted + " / " + s.ceiling),
      cell(s.disagreement === 0 ? "none" : (s.disagreement > 0 ? "GitHub counts " + s.disagreement + " more"
        : "GitHub counts " + -s.disagreement + " fewer"), s.disagreement === 0 ? "" : "disagree"),
      cell(s.ghost_checked_at_ns ? s.ghosts_removed + " removed · " + s.runners_missing + " missing at GitHub · " +
        ago(s.ghost_checked_at_ns, now) : "not yet", s.runners_missing ? "disagree" : ""),
    ], "no tier takes jobs from a scale set");
    fill("nodes", overview.nodes, (n) => [
      cell(n.name, "mono"), cell(n.state, "state-" + n.state), cell(n.site), cell(n.provider),
      cell(n.vcpu_used + " / " + n.vcpu), cell(gib(n.memory_used) + " / " + gib(n.memory)), cell(n.leases),
      cell(ago(n.last_seen_at_ns, now)), cell(until(n.cert_expires_at_ns, now)),
    ], "no node has registered");
    const phases = {};
    for (const l of overview.leases) phases[l.phase] = (phases[l.phase] || 0) + 1;
    document.getElementById("phases").textContent =
      Object.entries(phases).map(([p, n]) => n + " " + p).join(" · ") || "no open lease";
    fill("leases", overview.leases, (l) => [
      cell(short(l.id), "mono"), cell(l.phase, "phase-" + l.phase), cell(l.tier), cell(l.node, "mono"),
      cell(l.request_id || ""), cell(ago(l.created_at_ns, now)),
    ], "no open lease");
    fill("enrollments", overview.enrollments, (e) => [
      cell(e.node, "mono"), cell(e.fingerprint, "mono"), cell(ago(e.requested_at_ns, now)),
    ], "none waiting");
    fill("jobs", overview.jobs, (j) => [
      cell(short(j.lease), "mono"), cell(j.tier), cell(j.node, "mono"), cell(j.request_id),
      cell(ago(j.queued_at_ns, now)), cell(span(j.queued_at_ns, j.started_at_ns)),
      cell(span(j.started_at_ns, j.finished_at_ns)), cell(j.result, "result-" + j.result),
    ], "no job in the last day");
    const samples = history.samples;
    const t0 = samples.length ? samples[0].at_ns : now, t1 = samples.length ? samples[samples.length - 1].at_ns : now;
    plot("plot-latency", [
      { className: "p50", points: samples.filter((s) => s.dispatch_p50_s >= 0).map((s) => [s.at_ns, s.dispatch_p50_s]) },
      { className: "p99", points: samples.filter((s) => s.dispatch_p99_s >= 0).map((s) => [s.at_ns, s.dispatch_p99_s]) },
    ], "s", t0, t1);
    plot("plot-capacity", [
      { className: "total", points: samples.map((s) => [s.at_ns, s.vcpu_total]) },
      { className: "used", points: samples.map((s) => [s.at_ns, s.vcpu_used]) },
    ], "vcpu", t0, t1);
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("summary").textContent = "cannot reach the control plane: " + e;
  }
}

refresh();
setInterval(refresh, 5000);
