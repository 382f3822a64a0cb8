// What the status-page scripts share (browser.mjs, reconnect.mjs): headless Chromium, calls to the
// door with the API key, and a card's phase.
import puppeteer from 'puppeteer-core';

// Headless Chromium from $CHROMIUM.
export function launchBrowser() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
}

// Calls to the door at `url` with `key`; each resolves to the HTTP status (the body is read).
export function doorCalls(url, key) {
  const headers = { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' };
  const post = async (path, body) => {
    const r = await fetch(url + path, { method: 'POST', headers, body });
    await r.text();
    return r.status;
  };
  return {
    chat: (model) => post('/v1/chat/completions',
      JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })),
    adminLoad: (model) => post('/admin/load/' + model, '{}'),
  };
}

export const phaseOf = (page, m) => page.$eval(`[data-model="${m}"]`, (e) => e.dataset.phase);
export const waitPhase = (page, m, phase) =>
  page.waitForFunction((m, p) => document.querySelector(`[data-model="${m}"]`)?.dataset.phase === p,
    { timeout: 60000 }, m, phase);

// A new page on the door's /ui with `key` entered in its key form; page errors go to `problems`.
export async function openWithKey(browser, url, key, problems) {
  const page = await browser.newPage();
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await page.goto(url + '/ui', { waitUntil: 'load' });
  await page.waitForSelector('#key-form:not([hidden])');
  await page.type('#key-input', key);
  await page.keyboard.press('Enter');
  return page;
}
