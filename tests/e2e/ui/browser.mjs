// The status page in a real browser (headless Chromium over the DevTools protocol, puppeteer-core),
// against `kevlaya-orch serve` with stand-in children (tests/http/test_ui_browser.cpp starts it).
// A profile "crashy" fails at every start ($KEVLAYA_FAIL_KIND / $KEVLAYA_FAIL_TEXT: the failure kind
// and log text its card must show). Checks: / redirects a browser to /ui; the page asks for the key and then paints; a switch
// kev -> laya changes the cards' phases and adds a timeline bar with its phases; a profile whose
// start always fails shows its failure and log tail; requests and logs show; keyboard focus shows a
// switch's numbers; no console errors; no layout shift after the first paint. Saves screenshots
// (light/dark x wide/narrow) to $KEVLAYA_ARTIFACTS and prints the figures (UI_* lines).
// Exit 0 = pass; any failed check throws (exit 1).
import { launchBrowser, doorCalls, phaseOf, waitPhase } from './page.mjs';
import { mkdirSync } from 'node:fs';
import assert from 'node:assert/strict';

const url = process.env.KEVLAYA_URL;
const key = process.env.KEVLAYA_KEY;
const out = process.env.KEVLAYA_ARTIFACTS;
mkdirSync(out, { recursive: true });

const { chat, adminLoad } = doorCalls(url, key);
const browser = await launchBrowser();
const problems = [];
try {
  const page = await browser.newPage();
  let keyed = false;  // before the key is typed, /status answers 401 (expected; Chromium logs it)
  page.on('console', (m) => {
    if (!keyed && / 401 /.test(m.text())) return;
    if (m.type() === 'error' || m.type() === 'warn') problems.push('console ' + m.type() + ': ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await page.setViewport({ width: 1400, height: 1100 });

  // A browser at / lands on /ui; without a key only the health line and the key form show.
  await page.goto(url + '/', { waitUntil: 'load' });
  assert.equal(new URL(page.url()).pathname, '/ui');
  await page.waitForSelector('#key-form:not([hidden])');
  await page.waitForFunction(() => document.getElementById('health-text').textContent.startsWith('healthy'));
  assert.equal(await page.$eval('#models-section', (e) => e.hidden), true);

  // The key, typed once (kept in sessionStorage): the page paints from /status and goes live.
  keyed = true;
  await page.type('#key-input', key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-model="kev"]');
  await page.waitForFunction(() => document.getElementById('live-text').textContent === 'live', { timeout: 20000 });
  assert.equal(await page.evaluate(() => sessionStorage.getItem('kevlaya-api-key')), key);
  for (const m of ['kev', 'laya', 'crashy']) assert.equal(await phaseOf(page, m), 'stopped');
  assert.equal(await page.$eval('[data-model="kev"] .b-load', (e) => e.hidden), false);

  // From here on: every phase each card shows, and any layout shift.
  await page.evaluate(() => {
    window.seen = {};
    new MutationObserver((muts) => {
      for (const m of muts) {
        const card = m.target;
        if (m.attributeName === 'data-phase' && card.dataset.model)
          (window.seen[card.dataset.model] ||= []).push(card.dataset.phase);
      }
    }).observe(document.getElementById('cards'), { subtree: true, attributes: true, attributeFilter: ['data-phase'] });
    window.shift = 0;
    new PerformanceObserver((l) => { for (const e of l.getEntries()) if (!e.hadRecentInput) window.shift += e.value; })
      .observe({ type: 'layout-shift', buffered: false });
  });

  // A switch: kev, then laya (one at a time).
  assert.equal(await chat('kev'), 200);
  await waitPhase(page, 'kev', 'ready');
  assert.equal(await chat('laya'), 200);
  await waitPhase(page, 'laya', 'ready');
  await waitPhase(page, 'kev', 'stopped');
  const seen = await page.evaluate(() => window.seen);
  assert.deepEqual(seen.laya, ['starting', 'ready']);
  // (draining only shows when a request is still in flight)
  assert.deepEqual(seen.kev.filter((p) => p !== 'draining'), ['starting', 'ready', 'stopping', 'stopped']);
  await page.waitForSelector('li.sw[data-switch="kev>laya"]');
  const segs = await page.$$eval('li.sw[data-switch="kev>laya"] .bar span', (s) => s.map((x) => x.dataset.seg));
  assert.ok(segs.includes('stop') && segs.includes('spawn'), 'switch phases shown: ' + segs.join(','));
  const order = ['drain', 'save', 'stop', 'vram_wait', 'spawn', 'ready', 'restore', 'other'];
  assert.deepEqual(segs, order.filter((p) => segs.includes(p)), 'phases in switch order');
  assert.match(await page.$eval('li.sw[data-switch="kev>laya"] .total', (e) => e.textContent), /^\d+(\.\d)? m?s$/);
  assert.ok(await page.$('li.sw[data-switch=">kev"]'), 'the first start (nothing -> kev) is on the timeline');
  // pid and port of the new child, after the switch
  await page.waitForFunction(() => /^\d+$/.test(document.querySelector('[data-model="laya"] .f-pid').textContent));

  // Regression: a /status snapshot that arrives after newer phase events (its own connection) must
  // not put a stopped child back to ready; a snapshot that agrees with the events still fills in.
  const layaPort = await page.$eval('[data-model="laya"] .f-port', (e) => e.textContent);
  const snapshot = (port) => page.evaluate((port) => window.kevlayaUi.applyProfiles({ profiles: [
    { name: 'kev', state: 'ready', pid: 4242, backend: 'llama_server' },
    { name: 'laya', state: 'ready', port, backend: 'llama_server' }] }), port);
  await snapshot(4343);
  assert.equal(await phaseOf(page, 'kev'), 'stopped');
  assert.notEqual(await page.$eval('[data-model="kev"] .f-pid', (e) => e.textContent), '4242');
  assert.equal(await page.$eval('[data-model="laya"] .f-port', (e) => e.textContent), '4343');
  await snapshot(Number(layaPort));
  assert.equal(await page.$eval('[data-model="laya"] .f-port', (e) => e.textContent), layaPort);

  // Keyboard: focusing a switch shows its numbers.
  await page.focus('li.sw[data-switch="kev>laya"]');
  const tip = await page.$eval('li.sw[data-switch="kev>laya"] .tip', (e) => ({ d: getComputedStyle(e).display, t: e.textContent }));
  assert.equal(tip.d, 'block');
  assert.match(tip.t, /kev → laya/);
  assert.match(tip.t, /stop\d+ ms/);

  // Requests: both calls listed, newest first.
  await page.waitForFunction(() => document.querySelectorAll('#reqs tr').length >= 2);
  const rows = await page.$$eval('#reqs tr', (t) => t.map((r) => [...r.children].map((c) => c.textContent)));
  assert.equal(rows[0][1], 'laya');
  assert.equal(rows[0][3], '200');
  assert.equal(rows[1][1], 'kev');

  // A crash-looping profile: every start fails; the card shows why, with the log tail.
  assert.notEqual(await adminLoad('crashy'), 200);
  await waitPhase(page, 'crashy', 'failed');
  await page.waitForSelector('[data-model="crashy"] .failure:not([hidden])');
  const failure = await page.$eval('[data-model="crashy"] .failure', (e) => ({
    msg: e.querySelector('.f-msg').textContent, tail: e.querySelector('.f-tail').textContent }));
  assert.match(failure.msg, new RegExp(process.env.KEVLAYA_FAIL_KIND || 'cuda_oom'));
  assert.match(failure.tail, new RegExp(process.env.KEVLAYA_FAIL_TEXT || 'out of memory', 'i'));
  await page.waitForSelector('li.sw.failed[data-switch="laya>crashy"]');
  assert.ok((await page.evaluate(() => window.seen.crashy)).includes('failed'));

  // Logs: laya's log tail (the children write their logs to log_dir).
  await page.select('#log-model', 'laya');
  await page.waitForFunction(() => document.getElementById('log').textContent.includes('listening'), { timeout: 20000 });

  const paints = await page.evaluate(() => window.kevlayaUi.paints);

  const shift = await page.evaluate(() => window.shift);
  const lat = (await page.evaluate(() => window.kevlayaUi.latencies)).slice().sort((a, b) => a - b);
  assert.ok(lat.length >= 8, 'events applied: ' + lat.length);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  console.log(`UI_EVENT_TO_DOM_MS n=${lat.length} median=${pct(0.5)} p95=${pct(0.95)} max=${lat[lat.length - 1]}`);
  console.log(`UI_LAYOUT_SHIFT ${shift.toFixed(4)} (paints=${paints})`);
  assert.ok(shift < 0.05, 'layout shift after the first paint: ' + shift);

  // Asset sizes as served.
  let total = 0;
  for (const f of ['/ui', '/ui/app.js', '/ui/app.css', '/ui/icon.svg']) total += (await (await fetch(url + f)).arrayBuffer()).byteLength;
  console.log(`UI_ASSET_BYTES ${total}`);

  // Switch ahead: after kev, laya, kev, laya the door starts kev before it is asked for; the
  // timeline marks that switch, and its tooltip says so.
  for (const m of ['kev', 'laya', 'kev', 'laya']) assert.equal(await chat(m), 200);
  await page.waitForSelector('li.sw.ahead[data-switch="laya>kev"]');
  await waitPhase(page, 'kev', 'ready');
  assert.match(await page.$eval('li.sw.ahead[data-switch="laya>kev"]', (e) => e.getAttribute('aria-label')), /started ahead/);
  assert.match(await page.$eval('li.sw.ahead[data-switch="laya>kev"] .tip', (e) => e.textContent), /started ahead/);

  // Screenshots (with laya resident again): light and dark, wide and narrow.
  const rowsBefore = await page.$$eval('#reqs tr', (t) => t.length);
  assert.equal(await chat('laya'), 200);
  await page.waitForFunction((n) => document.querySelectorAll('#reqs tr').length > n, {}, rowsBefore);
  await waitPhase(page, 'laya', 'ready');
  await page.waitForFunction(() => document.querySelectorAll('#vram span').length > 0);
  await page.evaluate(() => document.activeElement?.blur());
  for (const scheme of ['light', 'dark']) {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
    await page.setViewport({ width: 1400, height: 1100 });
    await page.waitForFunction(() => document.getElementById('live-text').textContent === 'live');
    await page.screenshot({ path: `${out}/ui-wide-${scheme}.png`, fullPage: true });
    await page.setViewport({ width: 390, height: 844 });  // (isMobile would reload the page)
    await page.screenshot({ path: `${out}/ui-narrow-${scheme}.png`, fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `narrow (${scheme}): page wider than the screen by ${overflow}px`);
  }
  console.log(`UI_SCREENSHOTS ${out}`);
  assert.deepEqual(problems, [], 'console errors');
} catch (e) {
  console.error('console/page problems so far:\n' + problems.join('\n'));
  throw e;
} finally {
  await browser.close();
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
