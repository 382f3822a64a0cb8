// The status page across a door restart, in headless Chromium (puppeteer-core): this script starts
// `kevlaya-orch serve` ($KEVLAYA_ORCH $KEVLAYA_CONFIG, a fixed port in the config), opens the page,
// loads kev, stops the door (SIGTERM), checks the page says it is offline and keeps retrying, starts
// the door again and checks the page is live again and repainted from the new door (kev stopped,
// its phase changes followed live). Started by tests/http/test_ui_browser.cpp. Exit 0 = pass.
import { launchBrowser, doorCalls, waitPhase, openWithKey } from './page.mjs';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';

const url = process.env.KEVLAYA_URL;
const key = process.env.KEVLAYA_KEY;
const { adminLoad } = doorCalls(url, key);

// `kevlaya-orch serve`, resolved once it listens.
function startDoor() {
  const p = spawn(process.env.KEVLAYA_ORCH, ['serve', process.env.KEVLAYA_CONFIG], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error('the door did not start: ' + log)), 60000);
    p.stderr.on('data', (d) => {
      log += d;
      if (/listening on http/.test(log)) { clearTimeout(timer); resolve(p); }
    });
    p.on('exit', (code) => reject(new Error('the door exited with ' + code + ': ' + log)));
  });
}
const stopDoor = (p) => new Promise((resolve) => { p.on('exit', resolve); p.kill('SIGTERM'); });
const liveText = (page, text, timeout = 30000) =>
  page.waitForFunction((t) => document.getElementById('live-text').textContent === t, { timeout }, text);

let door = await startDoor();
const browser = await launchBrowser();
const problems = [];
try {
  const page = await openWithKey(browser, url, key, problems);
  await liveText(page, 'live');
  assert.equal(await adminLoad('kev'), 200);
  await waitPhase(page, 'kev', 'ready');

  // The door goes away: the page says so and keeps retrying (it stays on the page, key kept).
  await stopDoor(door);
  await liveText(page, 'offline · retrying');
  await new Promise((r) => setTimeout(r, 2500));  // at least one more retry while it is down
  assert.equal(await page.$eval('#live-text', (e) => e.textContent), 'offline · retrying');

  // It comes back: live again, repainted from the new door (no child yet), and followed live.
  door = await startDoor();
  await liveText(page, 'live', 20000);
  await waitPhase(page, 'kev', 'stopped');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('kevlaya-api-key')), key);
  assert.equal(await adminLoad('kev'), 200);
  await waitPhase(page, 'kev', 'ready');
  console.log('UI_RECONNECT ok');
} finally {
  await browser.close();
  await stopDoor(door);
}
assert.deepEqual(problems, []);
