// The status page's Activity view, in-flight table and capture viewer (docs/ui.md). Uses app.js's
// helpers ($, el, api, clock, fmtMs, S: one global scope for the page's scripts). The history comes
// from GET /activity when asked (filters, Show); the in-flight list from GET /requests when the
// door's `queue` events say the load changed, its elapsed times ticking locally.
'use strict';

const ACT = { rows: [], sort: { key: 'at_ms', dir: -1 }, inflight: [], fetchedAt: 0, pending: null, models: new Set() };

function actQuery() {
  const q = new URLSearchParams({ limit: '500' });
  for (const [id, k] of [['act-model', 'model'], ['act-status', 'status'], ['act-client', 'client'], ['act-since', 'since']]) {
    const v = $(id).value.trim();
    if (v) q.set(k, v);
  }
  return q;
}

async function loadActivity() {
  for (const m of S.cards.keys()) {
    if (ACT.models.has(m)) continue;
    ACT.models.add(m);
    const o = el('option', '', m);
    o.value = m;
    $('act-model').appendChild(o);
  }
  const r = await api('/activity?' + actQuery());
  const j = await r.json().catch(() => ({}));
  if (!r.ok) {
    $('act-note').textContent = (j.error && j.error.message) || 'HTTP ' + r.status;
    ACT.rows = [];
  } else {
    ACT.rows = j.records || [];
    $('act-note').textContent = ACT.rows.length + ' request' + (ACT.rows.length === 1 ? '' : 's') +
      (j.next_before ? ' (the newest 500; narrow the filters for older ones)' : '');
  }
  paintActivity();
}

const cmp = (a, b) => (a == null ? (b == null ? 0 : 1) : b == null ? -1 : a < b ? -1 : a > b ? 1 : 0);

function paintActivity() {
  const { key, dir } = ACT.sort;
  const rows = [...ACT.rows].sort((a, b) => dir * cmp(a[key], b[key]));
  const body = $('act-rows');
  body.replaceChildren(...rows.map((r) => {
    const tr = el('tr');
    tr.dataset.model = r.model;
    const cells = [[clock(r.at_ms)], [r.model || '–'], [r.status + (r.error ? ' ' + r.error : ''), 'n' + (r.status >= 400 ? ' st-err' : '')],
      [r.total_ms, 'n'], [r.ttft_ms ?? '–', 'n'], [r.queue_ms ?? '–', 'n opt'], [r.prompt_tokens ?? '–', 'n opt'],
      [r.generated_tokens ?? '–', 'n'], [r.decode_tps != null ? r.decode_tps.toFixed(1) : '–', 'n'], [r.session || r.client || '–', 'opt']];
    for (const [t, c] of cells) tr.appendChild(el('td', c || '', t));
    const td = el('td');
    if (r.capture) {
      const b = el('button', 'link', 'capture');
      b.type = 'button';
      b.addEventListener('click', () => showCapture(r.capture));
      td.appendChild(b);
    }
    tr.appendChild(td);
    return tr;
  }));
  for (const th of $('act-table').querySelectorAll('th[data-key]'))
    th.setAttribute('aria-sort', th.dataset.key === key ? (dir > 0 ? 'ascending' : 'descending') : 'none');
  paintStats();
}

// Per model: requests, errors, median TTFT, mean decode tokens/s and a histogram of it.
function paintStats() {
  const by = new Map();
  for (const r of ACT.rows) {
    const m = r.model || '(none)';
    if (!by.has(m)) by.set(m, { n: 0, err: 0, ttft: [], tps: [] });
    const s = by.get(m);
    s.n++;
    if (r.status >= 400) s.err++;
    if (r.ttft_ms != null) s.ttft.push(r.ttft_ms);
    if (r.decode_tps != null) s.tps.push(r.decode_tps);
  }
  $('act-stats').replaceChildren(...[...by.entries()].map(([m, s]) => {
    const tr = el('tr');
    tr.dataset.model = m;
    s.ttft.sort((a, b) => a - b);
    const mean = s.tps.length ? s.tps.reduce((a, b) => a + b, 0) / s.tps.length : null;
    for (const [t, c] of [[m], [s.n, 'n'], [s.err, 'n'], [s.ttft.length ? fmtMs(s.ttft[s.ttft.length >> 1]) : '–', 'n'],
      [mean != null ? mean.toFixed(1) : '–', 'n tps-mean']]) tr.appendChild(el('td', c || '', t));
    const td = el('td');
    td.appendChild(histogram(s.tps));
    tr.appendChild(td);
    return tr;
  }));
}

function histogram(values) {
  const box = el('span', 'histo');
  if (!values.length) return box;
  const lo = Math.min(...values), hi = Math.max(...values), n = 12, counts = new Array(n).fill(0);
  for (const v of values) counts[Math.min(n - 1, Math.floor(((v - lo) / Math.max(1e-9, hi - lo)) * n))]++;
  const max = Math.max(...counts);
  for (const c of counts) {
    const b = el('i');
    b.style.height = Math.round((100 * c) / max) + '%';
    box.appendChild(b);
  }
  box.title = lo.toFixed(1) + ' – ' + hi.toFixed(1) + ' tok/s over ' + values.length + ' requests';
  return box;
}

async function exportCsv() {
  const q = actQuery();
  q.set('format', 'csv');
  q.set('limit', '1000');
  const r = await api('/activity?' + q);
  if (!r.ok) { $('act-note').textContent = 'export: HTTP ' + r.status; return; }
  const a = el('a');
  a.href = URL.createObjectURL(new Blob([await r.text()], { type: 'text/csv' }));
  a.download = 'kevlaya-activity.csv';
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.kevlayaUi.exported = (window.kevlayaUi.exported || 0) + 1;
}

async function showCapture(id) {
  const r = await api('/admin/captures/' + encodeURIComponent(id));
  const j = await r.json().catch(() => ({}));
  $('capture').hidden = false;
  $('capture-id').textContent = id;
  if (!r.ok) {
    $('capture-headers').textContent = (j.error && j.error.message) || 'HTTP ' + r.status;
    $('capture-request').textContent = $('capture-response').textContent = '';
    return;
  }
  $('capture-headers').textContent = j.request.headers.map(([k, v]) => k + ': ' + v).join('\n');
  $('capture-request').textContent = j.request.body;
  $('capture-response').textContent = 'HTTP ' + j.response.status + '\n' + j.response.body;
}

// ---- in flight ------------------------------------------------------------------------------

async function loadInflight() {
  ACT.pending = null;
  const r = await api('/requests').catch(() => null);
  if (!r || !r.ok) return;
  ACT.inflight = (await r.json()).requests || [];
  ACT.fetchedAt = Date.now();
  paintInflight();
}

function paintInflight() {
  $('inflight-empty').hidden = ACT.inflight.length > 0;
  $('inflight').replaceChildren(...ACT.inflight.map((q) => {
    const tr = el('tr');
    tr.dataset.id = q.id;
    tr.dataset.phase = q.phase;
    for (const [t, c] of [[q.id], [q.model], [q.phase], [fmtMs(q.elapsed_ms), 'n elapsed'], [q.session || q.client, 'opt']])
      tr.appendChild(el('td', c || '', t));
    const td = el('td'), b = el('button', 'b-cancel', 'Cancel');
    b.type = 'button';
    b.addEventListener('click', () => cancelRequest(q.id, b));
    td.appendChild(b);
    tr.appendChild(td);
    return tr;
  }));
}

async function cancelRequest(id, button) {
  button.disabled = true;
  const r = await api('/admin/requests/' + id + '/cancel', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  const j = await r.json().catch(() => ({}));
  $('inflight-msg').textContent = r.ok ? 'cancelled request ' + id + ' (' + j.phase + ')' : (j.error && j.error.message) || 'HTTP ' + r.status;
  loadInflight();
}

setInterval(() => {  // elapsed times move with the clock; text only
  const dt = Date.now() - ACT.fetchedAt;
  for (const tr of $('inflight').children) {
    const q = ACT.inflight.find((x) => String(x.id) === tr.dataset.id);
    if (q) tr.querySelector('.elapsed').textContent = fmtMs(q.elapsed_ms + dt);
  }
}, 1000);

$('act-filters').addEventListener('submit', (ev) => { ev.preventDefault(); loadActivity(); });
$('act-csv').addEventListener('click', exportCsv);
$('capture-close').addEventListener('click', () => { $('capture').hidden = true; });
for (const th of $('act-table').querySelectorAll('th[data-key]')) {
  th.tabIndex = 0;
  const sort = () => {
    ACT.sort = { key: th.dataset.key, dir: ACT.sort.key === th.dataset.key ? -ACT.sort.dir : -1 };
    paintActivity();
  };
  th.addEventListener('click', sort);
  th.addEventListener('keydown', (e) => { if (e.key === 'Enter') sort(); });
}

window.kevlayaActivity = {
  start: () => { loadActivity(); loadInflight(); },
  // The door's load changed (a `queue` event, at most 5 a second): the list and the history follow.
  changed: () => {
    if (ACT.pending) return;
    ACT.pending = setTimeout(() => { loadInflight(); loadActivity(); }, 250);
  },
};
