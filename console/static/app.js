// dpsql web console: log-in, queries with completion, answers as a table
// with 95% intervals and a chart with error bars, EXPLAIN, the budget and
// the session's history. Everything from the server is shown with
// textContent (never parsed as HTML); charts are SVG images in <img>.
"use strict";

const state = { csrf: "", schema: null, completions: [], active: -1, navigated: false, released: null };
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  if (method !== "GET" && state.csrf) opts.headers["X-CSRF-Token"] = state.csrf;
  const res = await fetch(path, opts);
  let data = {};
  try { data = await res.json(); } catch (e) { data = { error: "the server sent no answer (" + res.status + ")" }; }
  return { ok: res.ok, status: res.status, data };
}

function show(view) {
  $("login-view").hidden = view !== "login";
  $("work-view").hidden = view !== "work";
  $("logout").hidden = view !== "work";
  $("who").hidden = view !== "work";
}

async function start() {
  const r = await api("GET", "/api/session");
  if (r.ok) { await loggedIn(r.data); } else { show("login"); }
}

async function loggedIn(data) {
  state.csrf = data.csrf;
  state.analyst = data.analyst;
  $("who").textContent = "analyst " + data.analyst;
  show("work");
  restore();
  const s = await api("GET", "/api/schema");
  if (s.ok) { state.schema = s.data; explorer(); }
  await refreshBudget();
  await refreshHistory();
}

// The editor's text and the last answer are kept in this tab's session
// storage across a reload (for the analyst who left them; cleared at
// log-out).
function save(key, value) {
  try { sessionStorage.setItem("dpsql." + key, JSON.stringify({ analyst: state.analyst, value })); } catch (e) { /* full or off: not kept */ }
}

function saved(key) {
  try {
    const v = JSON.parse(sessionStorage.getItem("dpsql." + key));
    return v && v.analyst === state.analyst ? v.value : null;
  } catch (e) { return null; }
}

function restore() {
  const sql = saved("sql");
  if (sql !== null) $("sql").value = sql;
  const last = saved("answer");
  if (last) render(last.answer, last.explain);
}

// The explorer: each table with its policy, each column with its type
// and what the policy says of it; a column's name goes into the editor.
function explorer() {
  const box = $("explorer");
  box.textContent = "";
  for (const t of state.schema.tables) {
    const d = document.createElement("details");
    const sum = document.createElement("summary");
    sum.textContent = t.name + " ";
    const pol = document.createElement("span");
    pol.className = "policy"; pol.textContent = t.policy;
    sum.appendChild(pol);
    d.appendChild(sum);
    const ul = document.createElement("ul");
    for (const c of t.columns) {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button"; b.className = "column"; b.textContent = c.name;
      b.title = "put " + quoteName(c.name) + " in the editor";
      b.addEventListener("click", () => insert(quoteName(c.name)));
      const what = document.createElement("span");
      what.className = "policy"; what.textContent = " " + c.type + (c.policy ? " — " + c.policy : "");
      li.append(b, what);
      ul.appendChild(li);
    }
    d.appendChild(ul);
    box.appendChild(d);
  }
}

function insert(text) {
  const ta = $("sql");
  const at = ta.selectionStart, end = ta.selectionEnd;
  ta.value = ta.value.slice(0, at) + text + ta.value.slice(end);
  ta.setSelectionRange(at + text.length, at + text.length);
  ta.focus();
  save("sql", ta.value);
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  const r = await api("POST", "/api/login", { user: $("login-user").value, password: $("login-password").value });
  $("login-password").value = "";
  if (!r.ok) { $("login-error").textContent = r.data.error; return; }
  await loggedIn(r.data);
});

$("logout").addEventListener("click", async () => {
  await api("POST", "/api/logout", {});
  state.csrf = ""; state.released = null;
  try { sessionStorage.removeItem("dpsql.sql"); sessionStorage.removeItem("dpsql.answer"); } catch (e) { /* nothing kept */ }
  $("result").hidden = true;
  $("history").textContent = "";
  show("login");
});

function num(x, digits) {
  if (x === null || x === undefined) return "–";
  return Number(x.toPrecision(digits || 6)).toString();
}

function setBudget(b) {
  if (!b) return;
  $("budget-message").textContent = b.message || "";
  if (b.own) {
    $("budget-own-spent").textContent = num(b.own.spent_epsilon);
    $("budget-own-total").textContent = num(b.own.total_epsilon);
    $("budget-own-remaining").textContent = num(b.own.remaining_epsilon);
    $("budget-own-meter").max = b.own.total_epsilon || 1;
    $("budget-own-meter").value = b.own.total_epsilon - b.own.remaining_epsilon;
  }
  if (b.database) {
    $("budget-db-remaining").textContent = num(b.database.remaining_epsilon);
    $("budget-db-total").textContent = num(b.database.total_epsilon);
    $("budget-db-meter").max = b.database.total_epsilon || 1;
    $("budget-db-meter").value = b.database.total_epsilon - b.database.remaining_epsilon;
  }
  $("queries-left").textContent = b.queries_left === undefined ? "–" : String(b.queries_left);
  $("queries-left-eps").textContent = b.at_epsilon === undefined ? "–" : num(b.at_epsilon);
}

async function refreshBudget() {
  const r = await api("GET", "/api/budget");
  if (r.ok) setBudget(r.data);
}

async function refreshHistory() {
  const r = await api("GET", "/api/history");
  if (!r.ok) return;
  const ol = $("history");
  ol.textContent = "";
  for (const h of r.data.history.slice().reverse()) {
    const li = document.createElement("li");
    let cost = h.explain ? "explain, free" : h.cached ? "cached, free" : h.epsilon > 0 ? "ε " + num(h.epsilon) : "free";
    if (h.error) { cost = "failed"; li.className = "failed"; }
    else if (h.explain || h.cached || h.epsilon === 0) li.className = "free";
    li.textContent = h.statement + " — " + cost;
    li.title = (h.error ? h.error + "\n" : "") + "click: put it back in the editor";
    li.classList.add("recall");
    li.tabIndex = 0;
    const recall = () => { $("sql").value = h.statement; save("sql", h.statement); $("sql").focus(); };
    li.addEventListener("click", recall);
    li.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); recall(); } });
    ol.appendChild(li);
  }
}

function accuracy() {
  const body = { sql: $("sql").value };
  const t = $("target-error").value.trim();
  const e = $("epsilon").value.trim();
  if (t !== "") body.target_error = Number(t);
  else if (e !== "") body.epsilon = Number(e);
  return body;
}

async function run(path) {
  hideCompletions();
  $("error").textContent = "";
  save("sql", $("sql").value);
  // An empty ε field is not "the last ε again": a query runs with the ε
  // it names, in the field or in its OPTIONS (EXPLAIN needs none).
  if (path === "/api/query" && $("epsilon").value.trim() === "" && $("target-error").value.trim() === "" &&
      !/\b(epsilon|target_error)\s*=/i.test($("sql").value)) {
    $("error").textContent = "ε per query is empty: give one (or a target error), or write OPTIONS (epsilon = …) in the query";
    return;
  }
  $("status").textContent = "running…";
  $("cancel").disabled = false;
  $("run").disabled = true; $("explain").disabled = true;
  try {
    const r = await api("POST", path, accuracy());
    if (r.status === 401) { show("login"); $("login-error").textContent = r.data.error; return; }
    if (!r.ok) { $("error").textContent = r.data.error; $("result").hidden = true; return; }
    const explain = path === "/api/explain";
    render(r.data, explain);
    save("answer", { answer: r.data, explain });
    setBudget(r.data.budget);
    // A later statement's error: said under the editor, the answers
    // before it shown (they were charged).
    if (r.data.error) $("error").textContent = r.data.error;
  } finally {
    $("status").textContent = "";
    $("cancel").disabled = true;
    $("run").disabled = false; $("explain").disabled = false;
    await refreshHistory();
  }
}

$("run").addEventListener("click", () => run("/api/query"));
$("explain").addEventListener("click", () => run("/api/explain"));
$("cancel").addEventListener("click", () => api("POST", "/api/cancel", {}));

// render shows an answer: the last statement's in the main block (with
// the downloads), the statements' before it above, each with its text.
function render(ans, explain) {
  state.released = ans.released;
  $("result").hidden = false;
  const earlier = $("earlier");
  earlier.textContent = "";
  const parts = ans.parts || [];
  for (const p of parts.slice(0, -1)) {
    const block = $("part-template").content.firstElementChild.cloneNode(true);
    fill(block, p, explain);
    earlier.appendChild(block);
  }
  fill($("answer"), ans, explain);
  const stmt = $("answer").querySelector(".statement");
  stmt.hidden = parts.length < 2;
}

// fill draws one statement's answer into block: its cost, its table
// (values with their intervals), its notes and its chart.
function fill(block, part, explain) {
  const rel = part.released;
  const q = (c) => block.querySelector("." + c);
  q("statement").textContent = part.statement || "";
  let cost = explain ? "EXPLAIN: nothing spent" : rel.cached ? "answered from the cache: nothing spent"
    : (rel.epsilon > 0 || rel.delta > 0) ? "spent ε=" + num(rel.epsilon) + (rel.delta > 0 ? ", δ=" + num(rel.delta, 3) : "") : "";
  if (rel.message) cost = rel.message + (cost ? " — " + cost : "");
  q("cost").textContent = cost;
  const fig = q("chart");
  const chart = part.chart || { kind: "table", whiskers: 0 };
  fig.hidden = chart.kind === "table";
  fig.dataset.kind = chart.kind;
  fig.dataset.whiskers = String(chart.whiskers);
  const img = fig.querySelector("img");
  if (chart.image) img.src = chart.image; else img.removeAttribute("src");
  fig.querySelector("figcaption").textContent = chart.kind === "line"
    ? "Line: the released values; band: their 95% intervals."
    : "Bars: the released values; whiskers: their 95% intervals.";
  const table = q("result-table");
  table.textContent = "";
  if (rel.columns) {
    const head = table.createTHead().insertRow();
    for (const c of rel.columns) { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); }
    const body = table.createTBody();
    rel.rows.forEach((row, i) => {
      const tr = body.insertRow();
      row.forEach((v, j) => {
        const td = tr.insertCell();
        td.textContent = rel.text[i][j];
        const iv = rel.noise_confidence_intervals[i] && rel.noise_confidence_intervals[i][j];
        if (typeof v === "number") td.className = "num";
        if (iv) {
          td.dataset.lo = String(iv.lower_bound);
          td.dataset.hi = String(iv.upper_bound);
          if (iv.few_rows) td.className += " few";
        }
      });
    });
  }
  const notes = q("notes");
  notes.textContent = "";
  for (const n of rel.notes || []) { const li = document.createElement("li"); li.textContent = n; notes.appendChild(li); }
}

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url; a.download = name;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function csvField(s) {
  s = s === null || s === undefined ? "" : String(s);
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

// toCSV is what Download CSV saves: a header, then each row. In full,
// each value as released, with its 95% interval's ends in COLUMN_lo95 and
// COLUMN_hi95 for the columns that have intervals (not keys); shown, each
// value as the table shows it, to the digits its noise justifies.
function toCSV(rel, shown) {
  const ivAt = (i, j) => rel.noise_confidence_intervals[i] && rel.noise_confidence_intervals[i][j];
  const withIv = rel.columns.map((c, j) => !shown && rel.rows.some((row, i) => ivAt(i, j)));
  const head = [];
  rel.columns.forEach((c, j) => { head.push(c); if (withIv[j]) head.push(c + "_lo95", c + "_hi95"); });
  const lines = [head.map(csvField).join(",")];
  rel.rows.forEach((row, i) => {
    const out = [];
    row.forEach((v, j) => {
      if (shown) { out.push(rel.text[i][j]); return; }
      out.push(v);
      if (withIv[j]) { const iv = ivAt(i, j); out.push(iv ? iv.lower_bound : "", iv ? iv.upper_bound : ""); }
    });
    lines.push(out.map(csvField).join(","));
  });
  return lines.join("\n") + "\n";
}

$("download-csv").addEventListener("click", () => {
  const rel = state.released;
  if (rel && rel.columns) download("answer.csv", "text/csv", toCSV(rel, false));
});

$("download-csv-shown").addEventListener("click", () => {
  const rel = state.released;
  if (rel && rel.columns) download("answer-shown.csv", "text/csv", toCSV(rel, true));
});

$("download-json").addEventListener("click", () => {
  if (state.released) download("answer.json", "application/json", JSON.stringify(state.released, null, 2));
});

// Completion: the dialect's words, the tables and their columns.
function words() {
  const out = [];
  if (!state.schema) return out;
  for (const k of state.schema.keywords) out.push(k);
  for (const t of state.schema.tables) {
    out.push(quoteName(t.name));
    for (const c of t.columns) out.push(quoteName(c.name));
  }
  return Array.from(new Set(out));
}

function quoteName(n) { return /^[a-z_][a-z0-9_]*$/.test(n) ? n : '"' + n.replace(/"/g, '""') + '"'; }

function currentWord() {
  const ta = $("sql");
  const upto = ta.value.slice(0, ta.selectionStart);
  const m = upto.match(/("[^"]*|[A-Za-z_][A-Za-z0-9_]*)$/);
  return m ? { word: m[1], start: ta.selectionStart - m[1].length } : { word: "", start: ta.selectionStart };
}

function updateCompletions() {
  const { word } = currentWord();
  const list = $("completions");
  list.textContent = "";
  state.completions = [];
  state.active = -1;
  state.navigated = false;
  if (word.length < 1) { list.hidden = true; return; }
  const w = word.toLowerCase();
  state.completions = words().filter((c) => c.toLowerCase().startsWith(w) && c.toLowerCase() !== w).slice(0, 12);
  state.completions.forEach((c, i) => {
    const li = document.createElement("li");
    li.textContent = c; li.setAttribute("role", "option");
    li.addEventListener("mousedown", (ev) => { ev.preventDefault(); take(i); });
    list.appendChild(li);
  });
  list.hidden = state.completions.length === 0;
  if (!list.hidden) setActive(0);
}

function setActive(i) {
  const items = $("completions").children;
  if (state.active >= 0 && items[state.active]) items[state.active].className = "";
  state.active = i;
  if (items[i]) items[i].className = "active";
}

function hideCompletions() { $("completions").hidden = true; state.completions = []; state.active = -1; }

function take(i) {
  const ta = $("sql");
  const { start } = currentWord();
  const c = state.completions[i];
  const after = ta.value.slice(ta.selectionStart);
  const sep = /[(=>]$/.test(c) ? "" : " ";
  ta.value = ta.value.slice(0, start) + c + sep + after;
  const pos = start + c.length + sep.length;
  ta.setSelectionRange(pos, pos);
  hideCompletions();
  ta.focus();
}

$("sql").addEventListener("input", () => { updateCompletions(); save("sql", $("sql").value); });
$("sql").addEventListener("beforeinput", (ev) => {
  if (state.swallowNewline && (ev.inputType === "insertLineBreak" || ev.inputType === "insertParagraph" || (ev.inputType === "insertText" && /^[\r\n]$/.test(ev.data || "")))) ev.preventDefault();
  state.swallowNewline = false;
});
$("sql").addEventListener("keyup", () => { state.swallowNewline = false; });
$("sql").addEventListener("blur", () => setTimeout(hideCompletions, 100));
$("sql").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); run("/api/query"); return; }
  if ($("completions").hidden) return;
  const n = state.completions.length;
  if (ev.key === "ArrowDown") { ev.preventDefault(); state.navigated = true; setActive((state.active + 1) % n); }
  else if (ev.key === "ArrowUp") { ev.preventDefault(); state.navigated = true; setActive((state.active + n - 1) % n); }
  // Tab takes the highlighted completion; Enter only one chosen with the
  // arrows — else it is a new line ("AS n⏎" must not become "AS NOT").
  else if (ev.key === "Tab" || (ev.key === "Enter" && state.navigated)) {
    ev.preventDefault();
    state.swallowNewline = ev.key === "Enter"; // some input paths still insert it
    take(Math.max(0, state.active));
  }
  else if (ev.key === "Enter" || ev.key === "Escape") { hideCompletions(); }
});

start();
