// The status page opened with an agent's key when admin_api_keys are set, in headless Chromium:
// the log pane and a card's Unload show the door's 403 sentence, and nothing is unloaded. The
// admin key ($KEVLAYA_ADMIN_KEY) loads kev first. Started by tests/http/test_ui_browser.cpp.
import { launchBrowser, doorCalls, waitPhase, phaseOf, openWithKey } from './page.mjs';
import assert from 'node:assert/strict';

const url = process.env.KEVLAYA_URL;
const refusal = 'this key may call models but not /admin, /logs';
const browser = await launchBrowser();
const problems = [];
try {
  const page = await openWithKey(browser, url, process.env.KEVLAYA_KEY, problems);
  assert.equal(await doorCalls(url, process.env.KEVLAYA_ADMIN_KEY).adminLoad('kev'), 200);
  await waitPhase(page, 'kev', 'ready');

  await page.select('#log-model', 'kev');
  await page.waitForFunction((t) => document.getElementById('log').textContent.includes(t), { timeout: 15000 }, refusal);

  await page.click('[data-model="kev"] .b-unload');
  await page.waitForFunction((t) => document.querySelector('[data-model="kev"] .extra').textContent.includes(t),
    { timeout: 15000 }, refusal);
  assert.equal(await phaseOf(page, 'kev'), 'ready');
  console.log('UI_AGENT_KEY ok');
} finally {
  await browser.close();
}
assert.deepEqual(problems, []);
