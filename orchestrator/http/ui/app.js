// kevlaya status page (docs/ui.md). First paint from /status, then one small DOM update per
// /events event; after a lost stream, a fresh /status paint and a new stream. No framework, no
// inline script (the door's Content-Security-Policy allows only this file).
'use strict';

const KEY = 'kevlaya-api-key';
const MAX_SWITCHES = 12, MAX_ROWS = 50, SPARK_N = 60;
const PHASES = ['drain', 'save', 'stop', 'vram_wait', 'spawn', 'ready', 'restore', 'other'];
const PHASE_LABEL = { drain: 'drain', save: 'save KV', stop: 'stop', vram_wait: 'VRAM wait', spawn: 'spawn → listening',
  ready: 'listening → ready', restore: 'restore KV', other: 'other' };
const BILL = ['weights', 'kv', 'compute', 'overhead', 'adapters'];

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
const fmtMs = (ms) => (ms == null ? '–' : ms >= 10000 ? (ms / 1000).toFixed(1) + ' s' : Math.round(ms) + ' ms');
const fmtDur = (s) => {
  if (s == null || s < 0) return '–';
  s = Math.floor(s);
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' m ' + (s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' m';
};
const fmtMib = (m) => (m == null ? '?' : m >= 1024 ? (m / 1024).toFixed(1) + ' GiB' : Math.round(m) + ' MiB');
const clock = (ms) => new Date(ms || Date.now()).toLocaleTimeString([], { hour12: false });

// Everything the page knows, as the door last said it.
const S = {
  key: sessionStorage.getItem(KEY) || '',
  authorized: false,
  cards: new Map(),  // model -> { root, f: {field: element}, data }
  gpu: null, devices: null,
  spark: [],
  stream: null,      // AbortController of the /events fetch
  retry: null,
  logOffset: -1, logTimer: null,
  latencies: [],     // ms from an event's at_ms to its DOM update (window.kevlayaUi)
};
window.kevlayaUi = { latencies: S.latencies, events: 0, paints: 0, applyProfiles: (st) => applyProfiles(st) };

function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers);
  if (S.key) headers.Authorization = 'Bearer ' + S.key;
  return fetch(path, Object.assign({}, opts, { headers, cache: 'no-store' }));
}

function setLive(text, ok) {
  $('live-text').textContent = text;
  $('live').className = 'live ' + (ok ? 'ok' : 'bad');
}

// ---- health and key ------------------------------------------------------------------------

async function paintHealth() {
  try {
    const r = await fetch('/health', { cache: 'no-store' });
    const j = await r.json();
    S.health = j.status === 'ok' ? { since: Date.now() - j.uptime_s * 1000 } : null;
    $('health-text').textContent = j.status === 'ok' ? 'healthy · up ' + fmtDur(j.uptime_s) : j.status;
    $('health').className = 'health ' + (r.ok ? 'ok' : 'bad');
  } catch (e) {
    $('health-text').textContent = 'door unreachable';
    $('health').className = 'health bad';
  }
}

function showLocked(locked) {
  $('locked').hidden = !locked;
  $('key-form').hidden = !locked;
  $('key-forget').hidden = locked || !S.key;
  for (const id of ['models-section', 'gpu-section', 'switch-section', 'requests-section', 'logs-section', 'inflight-section', 'activity-section'])
    $(id).hidden = locked;
}

$('key-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  S.key = $('key-input').value.trim();
  sessionStorage.setItem(KEY, S.key);
  $('key-input').value = '';
  start();
});
$('key-forget').addEventListener('click', () => {
  sessionStorage.removeItem(KEY);
  S.key = '';
  stopStream();
  start();
});

// ---- model cards ----------------------------------------------------------------------------

function card(name) {
  let c = S.cards.get(name);
  if (c) return c;
  const root = $('card-tpl').content.firstElementChild.cloneNode(true);
  root.dataset.model = name;
  root.querySelector('.name').textContent = name;
  const q = (s) => root.querySelector(s);
  c = { root, data: { name }, f: {
    phase: q('.phase'), backend: q('.f-backend'), pid: q('.f-pid'), port: q('.f-port'), uptime: q('.f-uptime'),
    queued: q('.f-queued'), inflight: q('.f-inflight'), restarts: q('.f-restarts'), idle: q('.f-idle'),
    extra: q('.extra'), failure: q('.failure'), msg: q('.f-msg'), tail: q('.f-tail'), actions: q('.actions'),
    load: q('.b-load'), unload: q('.b-unload') } };
  c.f.load.addEventListener('click', () => admin(c, '/admin/load/' + encodeURIComponent(name)));
  c.f.unload.addEventListener('click', () => admin(c, '/admin/unload'));
  S.cards.set(name, c);
  $('cards').appendChild(root);
  const opt = el('option', '', name);
  opt.value = name;
  $('log-model').appendChild(opt);
  return c;
}

function setText(node, text) {
  if (node.textContent !== String(text)) node.textContent = text;
}

// A loading child's time left: /status gives it as of its snapshot (`eta_s`); a phase event to
// `starting` gives the expected load from the event's time (`eta_at`), counted down here.
// Past the estimate it is negative: the card says the load is taking longer, never "about 0 s left".
function etaLeft(lp) {
  if (lp.eta_s == null) return null;
  return lp.eta_at ? lp.eta_s - (Date.now() - lp.eta_at) / 1000 : lp.eta_s;
}

function etaText(lp, left) {
  if (left == null) return '';
  if (left >= 0.05) return ', about ' + fmtDur(Math.ceil(left)) + ' left';
  return lp.eta_at ? ', taking longer than the estimated ' + fmtDur(Math.ceil(lp.eta_s)) : '';
}

function extraText(d) {
  const extra = [];
  if (d.pinned) extra.push('pinned');
  const lp = d.load_progress;
  if (lp) {
    const left = etaLeft(lp);
    extra.push('loading ' + (lp.stage || '') + (lp.pct != null ? ' ' + Math.round(lp.pct) + '%' : '') +
               etaText(lp, left));
  }
  if (d.remote) extra.push('remote ' + d.remote.state + (d.remote.last_error ? ': ' + d.remote.last_error : ''));
  if (d.gpus && d.gpus.length) extra.push('GPU ' + d.gpus.join(', '));
  if (d.page_cache_pct >= 0) extra.push('page cache ' + Math.round(d.page_cache_pct) + '%');
  if (d.state === 'failed' && d.retry_at) extra.push('retry in ' + fmtDur((d.retry_at - Date.now()) / 1000));
  return extra.join(' · ');
}

function paintCard(c) {
  const d = c.data, f = c.f;
  if (c.root.dataset.phase !== d.state) c.root.dataset.phase = d.state;
  setText(f.phase, d.state);
  setText(f.backend, d.backend || 'llama-server');
  setText(f.pid, d.pid > 0 ? d.pid : '–');
  setText(f.port, d.port > 0 ? d.port : '–');
  setText(f.queued, d.queued || 0);
  setText(f.inflight, d.in_flight || 0);
  setText(f.restarts, (d.total_restarts || 0) + (d.crashes ? ' · ' + d.crashes + ' crash' + (d.crashes > 1 ? 'es' : '') : ''));
  setText(f.extra, extraText(d));
  const lf = d.last_failure;
  f.failure.hidden = !lf;
  if (lf) {
    setText(f.msg, (lf.kind ? lf.kind + ': ' : '') + lf.message + (lf.hint ? ' — ' + lf.hint : ''));
    setText(f.tail, (lf.log_tail || []).join('\n') || '(no output)');
  }
  f.actions.hidden = !S.authorized;
  f.load.hidden = d.state === 'ready' || d.backend === 'remote';
  f.unload.hidden = d.state !== 'ready';
  tickCard(c);
}

// The parts that move with the clock (uptime, idle countdown): once a second, text only.
function tickCard(c) {
  const d = c.data;
  setText(c.f.uptime, d.state === 'ready' && d.since_ms ? fmtDur((Date.now() - d.since_ms) / 1000) : '–');
  setText(c.f.idle, d.idle_at ? fmtDur(Math.max(0, (d.idle_at - Date.now()) / 1000)) : d.pinned ? 'pinned' : '–');
  if (d.state === 'starting' && d.load_progress) setText(c.f.extra, extraText(d));  // the ETA counts down
}
setInterval(() => {
  for (const c of S.cards.values()) tickCard(c);
  if (S.health) setText($('health-text'), 'healthy · up ' + fmtDur((Date.now() - S.health.since) / 1000));
}, 1000);

async function admin(c, path) {
  const b = path.startsWith('/admin/load') ? c.f.load : c.f.unload;
  b.disabled = true;
  try {
    const r = await api(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    if (!r.ok) {
      const j = await r.json().catch(() => ({}));
      setText(c.f.extra, (j.error && j.error.message) || 'HTTP ' + r.status);
    }
  } finally {
    b.disabled = false;
  }
}

function applyProfile(p) {
  const c = card(p.name);
  Object.assign(c.data, p);
  c.data.idle_at = p.idle_unload_in_s != null ? Date.now() + p.idle_unload_in_s * 1000 : null;
  paintCard(c);
}

// ---- GPU ------------------------------------------------------------------------------------

function paintGpu() {
  const g = S.gpu, bar = $('vram');
  const resident = [...S.cards.values()].filter((c) => c.data.state === 'ready' || c.data.state === 'draining').map((c) => c.data.name);
  bar.replaceChildren();
  if (!g || !g.plan) {
    $('gpu-mode').textContent = 'No residency plan on this door (no models priced).';
    return;
  }
  // The scale: the planned budget, else the GPUs' memory, else the biggest bill (budget unknown).
  const vram = (S.devices || []).reduce((a, d) => a + (d.vram_mib || 0), 0);
  const budget = g.budget_mib || vram || Math.max(1, ...Object.values(g.plan).map((p) => p.total_mib || 0));
  let used = 0;
  for (const name of resident) {
    const p = g.plan[name];
    if (!p) continue;
    for (const k of BILL) {
      const mib = p[k + '_mib'] || 0;
      if (mib <= 0) continue;
      const s = el('span', 'seg-' + k);
      s.style.width = (100 * mib / budget).toFixed(3) + '%';
      s.title = name + ' · ' + k + ' ' + fmtMib(mib);
      bar.appendChild(s);
      used += mib;
    }
  }
  bar.setAttribute('aria-label', 'planned ' + fmtMib(used) + ' of ' + (g.budget_mib ? fmtMib(g.budget_mib) : 'an unknown budget'));
  const sets = (g.allowed_sets || []).map((s) => '[' + s.join(', ') + ']').join(' ');
  const devs = (S.devices || []).map((d) => 'GPU ' + d.index + (d.name ? ' ' + d.name : '') + ' ' + fmtMib(d.vram_mib)).join(', ');
  $('gpu-mode').textContent = 'residency ' + g.mode + ' · budget ' + (g.budget_mib ? fmtMib(g.budget_mib) : vram ? fmtMib(vram) + ' (' + devs + ')' : 'unknown') +
    ' · planned ' + fmtMib(used) + (resident.length ? ' for ' + resident.join(', ') : ' (nothing resident)') + (sets ? ' · sets ' + sets : '');
  paintNvml(budget);
}

function paintNvml(budget) {
  const n = $('nvml'), devs = S.devices || [];
  const dev = devs.find((d) => d.used_mib != null);
  n.hidden = !dev;
  if (!dev) return;
  const s = el('span');
  s.style.width = Math.min(100, 100 * dev.used_mib / (S.gpu.budget_mib || dev.vram_mib || budget)).toFixed(3) + '%';
  n.replaceChildren(s);
  n.title = 'GPU ' + dev.index + ' (' + (dev.name || 'NVML') + ') reports ' + fmtMib(dev.used_mib) + ' used of ' + fmtMib(dev.vram_mib);
}

function legend(ul, keys, prefix, labels) {
  ul.replaceChildren(...keys.map((k) => {
    const li = el('li');
    li.append(el('i', prefix + k), labels ? labels[k] : k);
    return li;
  }));
}

// ---- switch timeline ------------------------------------------------------------------------

function segments(sw) {
  const p = sw.phases_ms || {};
  const v = { drain: p.drain, save: p.save, stop: Math.max(0, (p.stop || 0) - (p.save || 0)), vram_wait: p.vram_wait,
    spawn: p.spawn_to_listening, ready: p.detect, restore: p.restore };
  const known = PHASES.slice(0, -1).reduce((a, k) => a + (v[k] || 0), 0);
  v.other = Math.max(0, (p.total || 0) - known);
  return v;
}

function addSwitch(sw) {
  const tl = $('timeline'), v = segments(sw), total = (sw.phases_ms || {}).total || 0;
  const li = el('li', 'sw' + (sw.ok ? '' : ' failed') + (sw.ahead ? ' ahead' : ''));
  li.tabIndex = 0;
  li.dataset.switch = (sw.from || '') + '>' + sw.to;
  li.dataset.total = total;
  const pair = el('span', 'pair', (sw.from || '∅') + ' → ' + sw.to);
  if (sw.reason) {  // why `from` made room: idle, starvation guard, cheapest to reload, protection
    const why = el('small', 'why', sw.reason);
    why.dataset.reason = sw.reason;
    pair.append(why);
  }
  li.append(pair);
  const bar = el('span', 'bar');
  const tip = el('div', 'tip');
  tip.setAttribute('role', 'tooltip');
  const t = el('table');
  for (const k of PHASES) {
    if (!v[k]) continue;
    const s = el('span', 'p-' + k);
    s.dataset.seg = k;
    s.dataset.ms = v[k];
    bar.appendChild(s);
    const tr = el('tr');
    tr.append(el('td', '', PHASE_LABEL[k]), el('td', 'n', fmtMs(v[k])));
    t.appendChild(tr);
  }
  const guessed = (sw.ahead ? ' · started ahead (guessed, no call waited)' : '') +
    (sw.reason ? ' · ' + sw.from + ' went: ' + sw.reason : '');
  tip.append(el('div', '', clock(sw.at_ms) + ' · ' + (sw.from || 'nothing') + ' → ' + sw.to + ' · ' + fmtMs(total) + guessed), t);
  if (!sw.ok) tip.appendChild(el('div', 'err', (sw.failure || 'failed') + ': ' + (sw.error || '')));
  li.setAttribute('aria-label', 'switch ' + (sw.from || 'nothing') + ' to ' + sw.to + ', ' + fmtMs(total) +
    (sw.ok ? '' : ', failed') + (sw.ahead ? ', started ahead' : '') + (sw.reason ? ', evicted: ' + sw.reason : ''));
  li.append(bar, el('span', 'total', fmtMs(total)), tip);
  tl.prepend(li);
  while (tl.children.length > MAX_SWITCHES) tl.lastElementChild.remove();
  $('timeline-empty').hidden = true;
  scaleTimeline();
}

// One scale for every bar (the longest switch shown fills the row), so lengths compare.
function scaleTimeline() {
  const rows = [...$('timeline').children];
  const max = Math.max(1, ...rows.map((r) => +r.dataset.total));
  for (const r of rows) {
    const total = +r.dataset.total;
    r.querySelector('.bar').style.width = (100 * total / max).toFixed(2) + '%';
    for (const s of r.querySelectorAll('.bar span')) s.style.width = (100 * +s.dataset.ms / Math.max(1, total)).toFixed(3) + '%';
  }
}

// ---- requests, runs, sparkline --------------------------------------------------------------

function addRow(tbody, cells) {
  const tr = el('tr');
  for (const [text, cls] of cells) tr.appendChild(el('td', cls || '', text));
  tbody.prepend(tr);
  while (tbody.children.length > MAX_ROWS) tbody.lastElementChild.remove();
}

function addRequest(r) {
  addRow($('reqs'), [[clock(r.at_ms)], [r.model], [r.endpoint, 'opt'], [r.status, 'n' + (r.status >= 400 ? ' st-err' : '')],
    [r.queue_ms ?? '–', 'n'], [r.swap_ms ?? '–', 'n opt'], [r.tokens_per_s != null ? r.tokens_per_s.toFixed(1) : '–', 'n']]);
}

function addRun(r) {
  addRow($('runs'), [[clock(r.at_ms)], [r.pipeline], [r.id, 'opt'], [r.verdict, 'v-' + r.verdict], [r.ms ?? '–', 'n']]);
}

function sample(depth) {
  S.spark.push(depth);
  if (S.spark.length > SPARK_N) S.spark.shift();
  const max = Math.max(1, ...S.spark), n = S.spark.length;
  const pts = S.spark.map((v, i) => ((120 * i) / Math.max(1, SPARK_N - 1)).toFixed(1) + ',' + (23 - (22 * v) / max).toFixed(1));
  if (n === 1) pts.push('0.0,' + (23 - (22 * depth) / max).toFixed(1));
  $('spark-line').setAttribute('points', pts.join(' '));
  setText($('spark-now'), depth);
}

// ---- logs -----------------------------------------------------------------------------------

async function pollLog() {
  clearTimeout(S.logTimer);
  const model = $('log-model').value;
  if (model && S.authorized && !document.hidden) {
    try {
      const r = await api('/logs/' + encodeURIComponent(model) + '?lines=200&after=' + S.logOffset);
      if (r.ok) {
        const j = await r.json();
        const pre = $('log'), atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        if (S.logOffset < 0 || j.offset < S.logOffset) pre.textContent = '';
        if (j.lines.length) pre.append((pre.textContent ? '\n' : '') + j.lines.join('\n'));
        if (pre.textContent.length > 200000) pre.textContent = pre.textContent.slice(-100000);
        if (!j.file && !pre.textContent) pre.textContent = '(no log yet)';
        S.logOffset = j.offset;
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      } else if (r.status === 403) {  // admin_api_keys set: this key may not read logs
        const j = await r.json().catch(() => ({}));
        $('log').textContent = '(' + ((j.error && j.error.message) || 'HTTP 403') + ')';
      }
    } catch (e) { /* the door is away; the stream's reconnect repaints */ }
  }
  if ($('log-follow').checked) S.logTimer = setTimeout(pollLog, 1000);
}
$('log-model').addEventListener('change', () => { S.logOffset = -1; pollLog(); });
$('log-follow').addEventListener('change', pollLog);
document.addEventListener('visibilitychange', () => { if (!document.hidden) pollLog(); });

// ---- /status and /events --------------------------------------------------------------------

function paintStatus(st) {
  for (const p of st.profiles) applyProfile(p);
  for (const f of st.failures || []) {
    const c = S.cards.get(f.model);
    if (c) { c.data.retry_at = Date.now() + (f.retry_after_s || 0) * 1000; paintCard(c); }
  }
  S.gpu = st.gpu || null;
  S.devices = st.devices || null;
  paintGpu();
  $('timeline').replaceChildren();
  $('timeline-empty').hidden = (st.recent_switches || []).length > 0;
  for (const sw of st.recent_switches || []) addSwitch(sw);
  $('reqs').replaceChildren();
  for (const r of st.recent_requests || []) addRequest(r);
  $('runs').replaceChildren();
  for (const r of st.recent_runs || []) addRun(r);
  sample(st.queue ? st.queue.door_waiting : 0);
  window.kevlayaUi.paints++;
}

function onEvent(ev) {
  window.kevlayaUi.events++;
  if (ev.type === 'phase') {
    if (S.opened) S.opened.add(ev.child);
    const c = card(ev.child);
    c.data.state = ev.to;
    c.data.since_ms = ev.at_ms;
    c.data.load_progress = ev.to === 'starting'
      ? { stage: 'starting', pct: null, eta_s: ev.eta_s ?? null, eta_at: ev.eta_s != null ? Date.now() : null }
      : null;
    if (ev.to === 'stopped' || ev.to === 'failed') { c.data.pid = 0; c.data.port = 0; }
    if (ev.failure) c.data.last_failure = ev.failure;
    paintCard(c);
    paintGpu();
  } else if (ev.type === 'switch') {
    addSwitch(ev);
    if (!ev.ok) {
      const c = card(ev.to);
      c.data.last_failure = { kind: ev.failure, message: ev.error, log_tail: ev.log_tail };
      paintCard(c);
    }
    if (ev.ok) refreshProfile();  // pid and port of the new child (one /status, not a poll)
  } else if (ev.type === 'request') {
    addRequest(ev);
  } else if (ev.type === 'run') {
    addRun(ev);
  } else if (ev.type === 'queue') {
    if (window.kevlayaActivity) window.kevlayaActivity.changed();
    for (const [m, l] of Object.entries(ev.by_model || {})) {
      const c = S.cards.get(m);
      if (c) { c.data.queued = l.waiting; c.data.in_flight = l.in_flight; paintCard(c); }
    }
    sample(ev.waiting);
  } else if (ev.type === 'unload' || ev.type === 'reload' || ev.type === 'remote') {
    refreshProfile();
  }
  if (ev.at_ms && ev.type !== 'switch') {  // a switch's at_ms is when it began
    const at = ev.at_ms;
    requestAnimationFrame(() => { S.latencies.push(Date.now() - at); if (S.latencies.length > 500) S.latencies.shift(); });
  }
}

// The cards from one /status read: after a switch, pid/port/backend; once the stream opens, the
// phases that changed between the first paint and the stream (no event carries those). Phase
// events own a local child's phase: a card that had one since the stream opened and whose phase
// the snapshot disagrees with keeps what the event said (the snapshot, on its own connection, can
// predate it). A remote profile has no phase events: the snapshot owns its state.
function applyProfiles(st) {
  for (const p of st.profiles || []) {
    const c = card(p.name);
    if (p.backend !== 'remote' && S.opened && S.opened.has(p.name) && c.data.state !== p.state) continue;
    Object.assign(c.data, p);
    paintCard(c);
  }
  paintGpu();
}

// One /status read at a time; one asked for meanwhile runs after it (its answer may be newer).
let refreshing = null, refreshAgain = false;
function refreshProfile() {
  if (refreshing) { refreshAgain = true; return; }
  refreshing = api('/status').then((r) => (r.ok ? r.json() : null)).then((st) => { if (st) applyProfiles(st); })
    .catch(() => {}).finally(() => {
      refreshing = null;
      if (refreshAgain) { refreshAgain = false; refreshProfile(); }
    });
}

function stopStream() {
  if (S.stream) S.stream.abort();
  S.stream = null;
  clearTimeout(S.retry);
}

// Reads the SSE stream with fetch (EventSource cannot send the API key); false when it ended.
async function follow(ctl) {
  const r = await api('/events', { signal: ctl.signal, headers: { Accept: 'text/event-stream' } });
  if (!r.ok || !r.body) return;
  setLive('live', true);
  S.opened = new Set();  // the children with a phase event on this stream
  refreshProfile();
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(buf.indexOf('\n', cut + 1) + 1);
      const data = frame.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data) onEvent(JSON.parse(data));
    }
  }
}

async function start() {
  stopStream();
  clearTimeout(S.retry);
  await paintHealth();
  let st = null;
  try {
    const r = await api('/status');
    if (r.status === 401) {
      S.authorized = false;
      showLocked(true);
      setLive(S.key ? 'key refused' : 'locked', false);
      return;
    }
    if (r.ok) st = await r.json();
  } catch (e) { /* below */ }
  if (!st) {
    setLive('offline · retrying', false);
    S.retry = setTimeout(start, 2000);
    return;
  }
  S.authorized = true;
  showLocked(false);
  paintStatus(st);
  if (S.logOffset < 0) pollLog();
  if (window.kevlayaActivity) window.kevlayaActivity.start();
  const ctl = new AbortController();
  S.stream = ctl;
  try { await follow(ctl); } catch (e) { /* dropped */ }
  if (ctl.signal.aborted) return;
  setLive('reconnecting', false);
  S.retry = setTimeout(start, 1000);  // a fresh /status paint, then the stream again
}

legend($('gpu-legend'), BILL, 'seg-');
legend($('switch-legend'), PHASES, 'p-', PHASE_LABEL);
start();
