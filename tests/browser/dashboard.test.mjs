// End-to-end: the dashboard in headless Chromium against a real `switchyard serve`.
//
// 1. Start the binary on the embedded default (simulated aurora, 35% failures, and
//    borealis) on 127.0.0.1:0, and open the dashboard at `/`.
// 2. Send traffic until aurora's circuit opens (polling /admin/health; bounded).
// 3. Assert the page shows the open circuit and why it tripped, the failover counts the
//    API reports, a transition to open, and — after clicking a request that failed over —
//    its every attempt. Save screenshots (laptop and phone) as artifacts.
// A second test runs the server with client keys, walks the admin-key prompt, and sees the
// provider card show its last health check.
//
// Everything is bounded in time, and the page may talk to nothing but 127.0.0.1.
// Env: SWITCHYARD_BIN (default target/debug/switchyard), CHROMIUM (/usr/bin/chromium),
// ARTIFACTS_DIR (target/browser-artifacts), SWITCHYARD_UPDATE_DOCS=1 to copy the
// screenshot to docs/dashboard.png.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = process.env.SWITCHYARD_BIN || join(ROOT, 'target/debug/switchyard');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS_DIR || join(ROOT, 'target/browser-artifacts');
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];
const MAX_REQUESTS = 400; // the embedded default's aurora opens after ~20; leave room
const TRAFFIC_DEADLINE_MS = 60_000;
const UI_TIMEOUT_MS = 8_000; // the page polls every 2 s; aurora's cooldown is 10 s

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** Start `switchyard serve` and resolve once it prints its address. */
async function startServer(args = []) {
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp' },
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stdout.resume(); // the access log, if any
  const base = await new Promise((resolve, reject) => {
    child.on('error', reject);
    const timer = setTimeout(() => reject(new Error(`no address within 20 s; stderr: ${stderr}`)), 20_000);
    // the listening line is on stderr, like every line `serve` says
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = stderr.match(/switchyard listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`switchyard exited with ${code} before listening: ${stderr}`));
    });
  });
  return { base, child, stderr: () => stderr };
}

async function stopServer(server) {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Remove a browser profile. Chromium's helper processes can still be writing into it for a
 * moment after the context closes (ENOTEMPTY on rmdir), so removal is retried, and a profile
 * that still cannot be removed is reported, not a test failure: it is a temp dir.
 */
function removeProfile(profile) {
  try {
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  } catch (e) {
    console.warn(`could not remove the browser profile ${profile}: ${e.message}`);
  }
}

/** Headless Chromium with a fresh profile (its --user-data-dir), removed on close. */
async function openBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'switchyard-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 30_000,
    });
    return {
      context,
      async close() {
        await context.close().catch(() => {});
        removeProfile(profile);
      },
    };
  } catch (e) {
    removeProfile(profile);
    throw e;
  }
}

/** A page of `viewport`; records every host it requests and every script error. */
async function newPage(context, viewport) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  const seen = { hosts: new Set(), errors: [] };
  page.on('request', (req) => seen.hosts.add(new URL(req.url()).host));
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') seen.errors.push(m.text());
  });
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  return { page, seen };
}

async function getJson(base, path, token) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const resp = await fetch(base + path, { headers, signal: AbortSignal.timeout(10_000) });
  assert.equal(resp.status, 200, `${path}: ${resp.status}`);
  return resp.json();
}

async function chat(base, { stream = false, token } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const resp = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      model: 'default',
      stream,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Say hello to the dashboard.' }],
    }),
    signal: AbortSignal.timeout(15_000),
  });
  await resp.arrayBuffer(); // read to the end: a stream is logged when it finishes
  return resp.status;
}

/** Send requests until aurora's circuit opens; bounded in count and time. */
async function tripAurora(base) {
  const started = Date.now();
  for (let sent = 1; sent <= MAX_REQUESTS; sent++) {
    assert.ok(Date.now() - started < TRAFFIC_DEADLINE_MS, 'aurora did not open in time');
    const status = await chat(base);
    assert.ok([200, 502, 504].includes(status), `unexpected status ${status}`);
    const health = await getJson(base, '/admin/health');
    const aurora = health.providers.find((p) => p.name === 'aurora');
    if (aurora.state === 'open') return sent;
  }
  assert.fail(`aurora's circuit did not open after ${MAX_REQUESTS} requests`);
}

const text = (page, selector) => page.locator(selector).first().innerText();

test('the dashboard shows an open circuit, failovers and a request\'s attempts', { timeout: 180_000 }, async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  let server;
  let chrome;
  try {
    server = await startServer();
    chrome = await openBrowser();
    const { page, seen } = await newPage(chrome.context, { width: 1360, height: 1000 });
    await page.goto(`${server.base}/`, { waitUntil: 'domcontentloaded' });
    const auroraCard = page.locator('[data-testid="provider-card"][data-provider="aurora"]');
    await auroraCard.waitFor();
    assert.equal(await page.locator('[data-testid="key-dialog"]').isVisible(), false, 'no keys: no prompt');

    const sent = await tripAurora(server.base);
    console.log(`# aurora's circuit opened after ${sent} request(s)`);
    for (let i = 0; i < 3; i++) assert.equal(await chat(server.base, { stream: true }), 200);

    // the open circuit, and why it tripped
    const state = auroraCard.locator('[data-testid="circuit-state"]');
    await page.waitForFunction(
      () => document.querySelector('[data-provider="aurora"] [data-testid="circuit-state"]')?.dataset.state === 'open',
      null,
      { timeout: UI_TIMEOUT_MS },
    );
    assert.match(await state.innerText(), /^open until \d\d:\d\d:\d\d/);
    assert.match(await auroraCard.locator('[data-testid="circuit-reason"]').innerText(), /tripped by timeout/);
    await page.locator('[data-testid="transition-row"][data-provider="aurora"][data-to="open"]').first().waitFor();
    assert.match(await text(page, '[data-testid="fleet-state"]'), /memory · connected/);

    // failover counts agree with the API (traffic has stopped; wait for a poll after it)
    const overview = await getJson(server.base, '/admin/overview');
    const api = Object.fromEntries(overview.providers.map((p) => [p.name, p]));
    assert.ok(api.aurora.failovers_from > 0 && api.borealis.failovers_to > 0, 'traffic failed over');
    await page.waitForFunction(
      (want) => document.querySelector('[data-provider="borealis"] [data-testid="failovers-to"] .value')?.textContent === String(want),
      api.borealis.failovers_to,
      { timeout: UI_TIMEOUT_MS },
    );
    assert.equal(await text(auroraCard, '[data-testid="failovers-from"] .value'), String(api.aurora.failovers_from));
    assert.match(await text(auroraCard, '[data-testid="provider-errors"]'), /timeout \d+/);
    assert.match(await text(page, '[data-provider="borealis"] [data-testid="ttft-chart-p50"]'), /p50 \d+/);

    // a request that failed over after failed tries, and its every attempt
    const row = page
      .locator('[data-testid="request-row"]:has([data-testid="failed-over"]):has([data-outcome="failed"])')
      .first();
    const id = await row.getAttribute('data-request-id');
    await row.click();
    const detail = page.locator('[data-testid="request-detail"]');
    await detail.waitFor({ state: 'visible' });
    const { request } = await getJson(server.base, `/admin/requests/${encodeURIComponent(id)}`);
    await detail.locator('[data-testid="attempt-row"]').nth(request.attempts.length - 1).waitFor();
    const attempts = detail.locator('[data-testid="attempt-row"]');
    assert.equal(await attempts.count(), request.attempts.length);
    assert.ok(request.attempts.length >= 2, 'a failover has at least two entries');
    assert.equal(await attempts.first().getAttribute('data-provider'), 'aurora');
    assert.notEqual(await attempts.first().getAttribute('data-outcome'), 'success');
    assert.equal(await attempts.last().getAttribute('data-provider'), 'borealis');
    assert.equal(await attempts.last().getAttribute('data-outcome'), 'success');
    assert.match(await detail.innerText(), new RegExp(id));

    const shot = join(ARTIFACTS, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    if (process.env.SWITCHYARD_UPDATE_DOCS === '1') {
      mkdirSync(join(ROOT, 'docs'), { recursive: true });
      copyFileSync(shot, join(ROOT, 'docs/dashboard.png'));
    }

    // a phone: one column, nothing wider than the screen
    const phone = await newPage(chrome.context, { width: 390, height: 844 });
    await phone.page.goto(`${server.base}/`, { waitUntil: 'domcontentloaded' });
    await phone.page.locator('[data-testid="provider-card"]').first().waitFor();
    const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than a phone`);
    await phone.page.screenshot({ path: join(ARTIFACTS, 'dashboard-phone.png'), fullPage: true });

    for (const s of [seen, phone.seen]) {
      const elsewhere = [...s.hosts].filter((h) => !h.startsWith('127.0.0.1:'));
      assert.deepEqual(elsewhere, [], 'the page requests nothing from elsewhere');
      assert.deepEqual(s.errors, [], 'no script errors');
    }
  } finally {
    await chrome?.close();
    await stopServer(server);
  }
});

test('with client keys the page asks for an admin key', { timeout: 90_000 }, async () => {
  const admin = 'sy-browser-admin-4d1c';
  const team = 'sy-browser-team-8a2e';
  const sha = (t) => createHash('sha256').update(t).digest('hex');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-keys-'));
  const config = join(dir, 'switchyard.toml');
  writeFileSync(config, `
[[providers]]
name = "aurora"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [10, 20]
cost_per_1k_tokens = 0.002
seed = 1
latency_scale = 0.1
health_check = { every = "1s", timeout = "500ms" }

[[routes]]
name = "default"
providers = ["aurora"]

[[keys]]
name = "ops"
sha256 = "${sha(admin)}"
routes = []
admin = true

[[keys]]
name = "team"
sha256 = "${sha(team)}"
routes = ["*"]
budget_usd = 5.0
`);
  let server;
  let chrome;
  try {
    server = await startServer(['--config', config]);
    chrome = await openBrowser();
    assert.equal(await chat(server.base, { token: team }), 200);
    const { page, seen } = await newPage(chrome.context, { width: 1200, height: 900 });
    await page.goto(`${server.base}/`, { waitUntil: 'domcontentloaded' });
    const dialog = page.locator('[data-testid="key-dialog"]');
    await dialog.waitFor({ state: 'visible' });

    await page.locator('[data-testid="key-input"]').fill(team);
    await page.locator('[data-testid="key-submit"]').click();
    await page.waitForFunction(() => /not an admin key/.test(document.getElementById('login-msg')?.textContent || ''));
    assert.equal(await dialog.isVisible(), true);

    await page.locator('[data-testid="key-input"]').fill(admin);
    await page.locator('[data-testid="key-submit"]').click();
    await page.locator('[data-testid="provider-card"][data-provider="aurora"]').waitFor();
    assert.equal(await dialog.isVisible(), false);
    const check = page.locator('[data-testid="provider-card"][data-provider="aurora"] [data-testid="health-check"]');
    await check.waitFor({ timeout: UI_TIMEOUT_MS });
    assert.match(await check.innerText(), /health check \(listing\): ok/);
    const teamBudget = page.locator('[data-testid="budget-key"][data-name="team"]');
    await teamBudget.waitFor();
    assert.match(await teamBudget.innerText(), /of \$5/);

    const html = await page.content();
    for (const secret of [admin, team, sha(admin), sha(team)]) {
      assert.ok(!html.includes(secret), 'no token or hash in the page');
    }
    assert.equal(await page.evaluate(() => Object.keys(localStorage).length), 0, 'the key is not kept beyond the tab');
    assert.deepEqual([...seen.hosts].filter((h) => !h.startsWith('127.0.0.1:')), []);
  } finally {
    await chrome?.close();
    await stopServer(server);
    rmSync(dir, { recursive: true, force: true });
  }
});
