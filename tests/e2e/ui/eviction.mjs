// The status page's switch timeline says why a child went, and a loading card shows the ETA from
// the child's past loads, in headless Chromium. Started by tests/http/test_ui_browser.cpp with
// stand-in children kev and laya (rotating; laya loads for 2 s).
import { launchBrowser, doorCalls, waitPhase, openWithKey } from './page.mjs';
import assert from 'node:assert/strict';

const url = process.env.KEVLAYA_URL;
const call = doorCalls(url, process.env.KEVLAYA_KEY);
const browser = await launchBrowser();
const problems = [];
try {
  const page = await openWithKey(browser, url, process.env.KEVLAYA_KEY, problems);
  assert.equal(await call.chat('kev'), 200);
  assert.equal(await call.chat('laya'), 200);  // kev idle: it goes, for being idle
  await page.waitForFunction(() => [...document.querySelectorAll('#timeline li')].some(
    (li) => li.dataset.switch === 'kev>laya' && li.querySelector('.why')?.dataset.reason === 'idle'), { timeout: 15000 });
  const label = await page.$eval('#timeline li[data-switch="kev>laya"]', (li) => li.getAttribute('aria-label'));
  assert.match(label, /evicted: idle/);

  assert.equal(await call.chat('kev'), 200);
  const second = call.chat('laya');  // laya's second load: its card shows the time left
  await page.waitForFunction(() => /about \d+ s left/.test(document.querySelector('[data-model="laya"] .extra')?.textContent || ''),
    { timeout: 15000 });
  if (process.env.KEVLAYA_ARTIFACTS) await page.screenshot({ path: process.env.KEVLAYA_ARTIFACTS + '/eviction-eta.png' });
  assert.equal(await second, 200);
  await waitPhase(page, 'laya', 'ready');
  console.log('UI_EVICTION ok');
} finally {
  await browser.close();
}
assert.deepEqual(problems, []);
