// The status page's Activity view, in-flight table and capture viewer in headless Chromium
// (tests/http/test_ui_browser.cpp starts the door: kev, laya, and "slow" whose tokens take 200 ms;
// captures on; the page is opened with the admin key). Checks: the history lists the calls made
// with their per-model decode tokens/s, a model filter and a sort apply, CSV export works, an
// in-flight call shows and its Cancel stops it (the client gets 410 cancelled), a capture opens with
// its credentials redacted; no console errors. Prints UI_ACTIVITY ok.
import { launchBrowser, openWithKey } from './page.mjs';
import { mkdirSync } from 'node:fs';
import assert from 'node:assert/strict';

const url = process.env.KEVLAYA_URL;
const key = process.env.KEVLAYA_KEY;
const adminKey = process.env.KEVLAYA_ADMIN_KEY;
const out = process.env.KEVLAYA_ARTIFACTS;
mkdirSync(out, { recursive: true });

const chat = (model, maxTokens) => fetch(url + '/v1/chat/completions', {
  method: 'POST',
  headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json', 'X-Session-ID': 'ui-agent' },
  body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens }),
});
const rowCount = () => document.querySelectorAll('#act-rows tr').length;

const browser = await launchBrowser();
const problems = [];
try {
  for (const m of ['kev', 'laya', 'kev']) {
    const r = await chat(m, 4);
    assert.equal(r.status, 200, await r.text());
  }
  const page = await openWithKey(browser, url, adminKey, problems);
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.setViewport({ width: 1400, height: 1400 });
  await page.waitForSelector('#activity-section:not([hidden])');
  await page.waitForFunction((n) => document.querySelectorAll('#act-rows tr').length >= n, { timeout: 20000 }, 3);

  // Per model: requests and the mean decode speed from llama-server's timings.
  const kevTps = await page.$eval('#act-stats tr[data-model="kev"] .tps-mean', (e) => e.textContent);
  assert.ok(Number(kevTps) > 0, 'kev decode tok/s: ' + kevTps);
  assert.equal(await page.$eval('#act-stats tr[data-model="kev"] td:nth-child(2)', (e) => e.textContent), '2');

  // Filter by model, then back; sort by total ms.
  await page.select('#act-model', 'laya');
  await page.click('#act-filters button[type="submit"]');
  await page.waitForFunction(() => [...document.querySelectorAll('#act-rows tr')].every((r) => r.dataset.model === 'laya'));
  assert.equal(await page.evaluate(rowCount), 1);
  await page.select('#act-model', '');
  await page.click('#act-filters button[type="submit"]');
  await page.waitForFunction((n) => document.querySelectorAll('#act-rows tr').length >= n, { timeout: 20000 }, 3);
  await page.click('#act-table th[data-key="total_ms"]');
  assert.equal(await page.$eval('#act-table th[data-key="total_ms"]', (e) => e.getAttribute('aria-sort')), 'descending');

  // Export: the CSV the door made, downloaded from a blob.
  await page.click('#act-csv');
  await page.waitForFunction(() => window.kevlayaUi.exported === 1);

  // A call in progress shows; Cancel stops it and its client is told so.
  const slow = chat('slow', 60);
  await page.waitForSelector('#inflight tr[data-phase="generating"]', { timeout: 60000 });
  await page.screenshot({ path: out + '/activity-inflight.png', fullPage: true });
  // A locator, not a handle: the table is re-rendered as calls change, and a locator finds the row again.
  await page.locator('#inflight tr[data-phase="generating"] .b-cancel').click();
  const answer = await slow;
  assert.equal(answer.status, 410);
  assert.equal((await answer.json()).error.code, 'cancelled');
  await page.waitForFunction(() => /cancelled request/.test(document.getElementById('inflight-msg').textContent));

  // A capture from its row: bodies shown, the API key redacted.
  await page.click('#act-filters button[type="submit"]');
  await page.waitForSelector('#act-rows button.link');
  await page.locator('#act-rows button.link').click();
  await page.waitForSelector('#capture:not([hidden])');
  await page.waitForFunction(() => document.getElementById('capture-request').textContent.includes('messages'));
  const headers = await page.$eval('#capture-headers', (e) => e.textContent);
  assert.match(headers, /authorization: \[redacted\]/i);
  assert.ok(!headers.includes(key), 'the key leaked into the capture');
  await page.screenshot({ path: out + '/activity.png', fullPage: true });
  await (await page.$('#activity-section')).screenshot({ path: out + '/activity-section.png' });

  assert.deepEqual(problems, []);
  console.log('UI_ACTIVITY ok');
} finally {
  await browser.close();
}
