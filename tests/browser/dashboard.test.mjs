// End-to-end: the dashboard in headless Chromium against a real `switchyard serve`.
//
// 1. Start the binary on the embedded default (simulated aurora, 35% failures, and
//    borealis) on 127.0.0.1:0, and open the dashboard at `/`.
// 2. Send traffic until aurora's circuit opens (polling /admin/health; bounded).
// 3. Assert the page shows the open circuit and why it tripped, the failover counts the
//    API reports, a transition to open, and — after clicking a request that failed over —
//    its every attempt. Save screenshots (laptop and phone) as artifacts.
// A second test runs the server with client keys, walks the admin-key prompt, and sees the
// provider card show its last health check. A third runs it on a throwaway PostgreSQL
// database, makes a team and keys through the admin API, sends traffic with them, and sees
// the Keys and Spend views show what the API reports (skipped only with
// SWITCHYARD_BROWSER_NO_DB=1; without PostgreSQL on 127.0.0.1:5432 it fails). A fourth points
// the server at a database that does not answer: the views say so, traffic is served.
//
// Everything is bounded in time, and the page may talk to nothing but 127.0.0.1.
// Env: SWITCHYARD_BIN (default target/debug/switchyard), CHROMIUM (/usr/bin/chromium),
// ARTIFACTS_DIR (target/browser-artifacts), SWITCHYARD_UPDATE_DOCS=1 to copy the
// laptop screenshots to docs/dashboard.png and docs/dashboard-spend.png.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
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
async function startServer(args = [], env = {}) {
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...env },
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

async function chat(base, { stream = false, token, model = 'default' } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const resp = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      model,
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

    // no database: the Keys and Spend views say so plainly, not an error wall
    const nodb = await newPage(chrome.context, { width: 1200, height: 800 });
    await nodb.page.goto(`${server.base}/#/keys`, { waitUntil: 'domcontentloaded' });
    const keysNotice = nodb.page.locator('[data-testid="keys-notice"][data-code="database_not_configured"]');
    await keysNotice.waitFor();
    assert.match(await keysNotice.innerText(), /^This gateway has no database/);
    assert.equal(await nodb.page.locator('[data-testid="keys-table"]').isVisible(), false);
    await nodb.page.locator('[data-testid="view-spend"]').click();
    const spendNotice = nodb.page.locator('[data-testid="spend-notice"][data-code="database_not_configured"]');
    await spendNotice.waitFor();
    assert.match(await spendNotice.innerText(), /no database/);
    assert.equal(await nodb.page.locator('[data-testid="days-all"]').isVisible(), false);
    assert.equal(await nodb.page.locator('[data-testid="error-banner"]').isVisible(), false, 'no error banner');
    assert.equal(await nodb.page.locator('#spend-period').isVisible(), false, 'no period to pick');
    await nodb.page.screenshot({ path: join(ARTIFACTS, 'dashboard-no-database.png') });
    await nodb.page.locator('[data-testid="view-overview"]').click();
    await nodb.page.locator('[data-testid="provider-card"]').first().waitFor();
    // Chromium reports each refused fetch (the 409s) on the console; nothing else may be there
    nodb.seen.errors = nodb.seen.errors.filter((e) => !/status of 409/.test(e));

    for (const s of [seen, phone.seen, nodb.seen]) {
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

// ---- the database's views ----

const PG = ['-h', '127.0.0.1', '-p', '5432', '-U', 'postgres'];

/** Run `sql` on database `db` with psql; its output, trimmed. */
function psql(db, sql) {
  return execFileSync('psql', [...PG, '-d', db, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], {
    encoding: 'utf8',
    timeout: 20_000,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PGCONNECT_TIMEOUT: '5' },
  }).trim();
}

/**
 * A throwaway database's name, or null (and why) when SWITCHYARD_BROWSER_NO_DB=1 and
 * PostgreSQL does not answer. Without that variable a missing PostgreSQL fails the test: CI
 * provides it (scripts/test starts it).
 */
function createDatabase() {
  try {
    psql('postgres', 'SELECT 1');
  } catch (e) {
    const why = `PostgreSQL on 127.0.0.1:5432 does not answer as user postgres (${String(e.stderr || e.message).trim()})`;
    if (process.env.SWITCHYARD_BROWSER_NO_DB === '1') return { skip: why };
    throw new Error(`${why}; the database views' test needs it (set SWITCHYARD_BROWSER_NO_DB=1 to skip it)`);
  }
  const name = `switchyard_browser_${randomBytes(6).toString('hex')}`;
  psql('postgres', `CREATE DATABASE ${name}`);
  return { name };
}

function dropDatabase(name) {
  try {
    psql('postgres', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } catch (e) {
    console.warn(`could not drop the test database ${name}: ${e.message}`);
  }
}

async function send(base, method, path, token, body) {
  const resp = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = await resp.json().catch(() => null);
  return { status: resp.status, json };
}

/** `fn()` until it returns a truthy value; fails after `ms`. */
async function until(what, ms, fn) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < deadline, `${what} within ${ms / 1000} s`);
    await sleep(200);
  }
}

/** The last `days` UTC days, today included, as the page asks for them. */
function lastDays(days) {
  const day = (ms) => new Date(ms).toISOString().slice(0, 10);
  const now = Date.now();
  return { from: day(now - (days - 1) * 86_400_000), to: day(now) };
}

test('with a database the Keys and Spend views show keys, teams and spend', { timeout: 180_000 }, async (t) => {
  const db = createDatabase();
  if (db.skip) {
    t.skip(`SWITCHYARD_BROWSER_NO_DB=1: ${db.skip}`);
    return;
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  const admin = 'sy-browser-db-admin-7f3a';
  const sha = (x) => createHash('sha256').update(x).digest('hex');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-db-'));
  const config = join(dir, 'switchyard.toml');
  writeFileSync(config, `
[server]
request_log = "${join(dir, 'requests.jsonl')}"

[[providers]]
name = "aurora"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [5, 10]
cost_per_1k_tokens = 0.002
seed = 1
latency_scale = 0.1

[[providers]]
name = "borealis"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [5, 10]
cost_per_1k_tokens = 0.01
seed = 2
latency_scale = 0.1

[[routes]]
name = "default"
providers = ["aurora"]

[[routes]]
name = "fast"
providers = ["borealis"]

[[keys]]
name = "ops"
sha256 = "${sha(admin)}"
routes = []
admin = true

[database]
url_env = "SWITCHYARD_BROWSER_DATABASE_URL"
`);
  const hostile = '<img src=x onerror="window.__pwned=1">';
  let server;
  let chrome;
  try {
    server = await startServer(['--config', config], {
      SWITCHYARD_BROWSER_DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${db.name}`,
    });
    const base = server.base;

    // a team and three keys through the admin API; one revoked
    const team = await send(base, 'POST', '/admin/teams', admin, { name: 'research', budget_usd: 50, budget_period: 'month' });
    assert.equal(team.status, 201, JSON.stringify(team.json));
    const made = {};
    for (const body of [
      { name: 'alice', team: 'research', budget_usd: 5, budget_period: 'day', rpm: 600, metadata: { owner: hostile } },
      { name: 'bob', routes: ['fast'], tpm: 100000, expires_at: '2099-01-01T00:00:00Z' },
      { name: 'carol' },
    ]) {
      const r = await send(base, 'POST', '/admin/keys', admin, body);
      assert.equal(r.status, 201, JSON.stringify(r.json));
      made[body.name] = r.json;
    }
    assert.equal((await send(base, 'DELETE', `/admin/keys/${made.carol.id}`, admin)).status, 200);

    // traffic: alice 3 on default and 1 on fast, bob 2 on fast
    const plan = [['alice', 'default'], ['alice', 'default'], ['alice', 'default'], ['alice', 'fast'], ['bob', 'fast'], ['bob', 'fast']];
    for (const [who, model] of plan) {
      // a new key is in memory at once here; a replica would follow within a second
      await until(`${who}'s request on ${model} answered`, 5_000, async () => (await chat(base, { token: made[who].key, model })) === 200);
    }

    // the spend writer has written every row (it reads the request log every 500 ms)
    const { from, to } = lastDays(7);
    const range = `from=${from}&to=${to}`;
    const report = (q) => getJson(base, `/admin/spend?${range}&${q}`, admin);
    const byKey = await until('the spend rows written', 30_000, async () => {
      const r = await report('group_by=key');
      const n = Object.fromEntries(r.groups.map((g) => [g.group, g.requests]));
      return n.alice === 4 && n.bob === 2 ? r : null;
    });
    const [all, byTeam, byModel, aliceDays, bobDays, teamDays] = await Promise.all([
      report('group_by=day'),
      report('group_by=team'),
      report('group_by=model'),
      report('group_by=day&key=alice'),
      report('group_by=day&key=bob'),
      report('group_by=day&team=research'),
    ]);
    assert.ok(byModel.groups.length >= 2, 'two models answered');
    assert.equal(teamDays.groups.reduce((n, g) => n + g.requests, 0), 4, "the team's requests are alice's");

    chrome = await openBrowser();
    const { page, seen } = await newPage(chrome.context, { width: 1360, height: 1000 });
    await page.goto(`${base}/`, { waitUntil: 'domcontentloaded' });
    await page.locator('[data-testid="key-dialog"]').waitFor({ state: 'visible' });
    await page.locator('[data-testid="key-input"]').fill(admin);
    await page.locator('[data-testid="key-submit"]').click();
    await page.locator('[data-testid="provider-card"]').first().waitFor();

    // Keys: the live keys with their team, budget and metadata (as text)
    await page.locator('[data-testid="view-keys"]').click();
    const row = (name) => page.locator(`[data-testid="key-row"][data-name="${name}"]`);
    await row('alice').waitFor();
    await row('bob').waitFor();
    assert.equal(await row('carol').count(), 0, 'a revoked key is not listed by default');
    assert.equal(await row('alice').locator('[data-testid="key-team"]').innerText(), 'research');
    assert.equal(await row('bob').locator('[data-testid="key-team"]').innerText(), '–');
    assert.equal(await row('alice').locator('[data-testid="key-budget"]').innerText(), '$5 per day');
    assert.match(await row('bob').innerText(), /fast[\s\S]*none[\s\S]*– \/ 100000[\s\S]*2099-01-01 00:00 UTC/);
    assert.equal(await row('alice').locator('[data-testid="key-metadata"]').innerText(), JSON.stringify({ owner: hostile }));
    assert.equal(await page.locator('[data-testid="keys-table"] img').count(), 0, 'metadata is text, not HTML');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await page.locator('[data-testid="keys-revoked"]').check();
    await row('carol').waitFor();
    assert.notEqual(await row('carol').locator('[data-testid="key-revoked"]').innerText(), 'no');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-keys.png'), fullPage: true });
    await page.locator('[data-testid="keys-team"]').selectOption('research');
    await row('bob').waitFor({ state: 'detached' });
    const shown = () => page.locator('[data-testid="key-row"]').evaluateAll((rs) => rs.map((r) => r.dataset.name));
    assert.deepEqual(await shown(), ['alice']);

    // pages of 50: 49 more keys make 52 with the revoked one
    for (let i = 1; i <= 49; i++) {
      const r = await send(base, 'POST', '/admin/keys', admin, { name: `extra-${String(i).padStart(2, '0')}` });
      assert.equal(r.status, 201, JSON.stringify(r.json));
    }
    await page.locator('[data-testid="keys-team"]').selectOption('');
    await row('extra-47').waitFor();
    assert.equal(await page.locator('[data-testid="key-row"]').count(), 50);
    assert.equal(await page.locator('[data-testid="keys-page"]').innerText(), 'keys 1–50 · more follow');
    assert.equal(await page.locator('[data-testid="keys-prev"]').isDisabled(), true);
    await page.locator('[data-testid="keys-next"]').click();
    await row('extra-48').waitFor();
    assert.deepEqual(await shown(), ['extra-48', 'extra-49']);
    assert.equal(await page.locator('[data-testid="keys-page"]').innerText(), 'keys 51–52');
    assert.equal(await page.locator('[data-testid="keys-next"]').isDisabled(), true);
    await page.locator('[data-testid="keys-prev"]').click();
    await row('alice').waitFor();
    assert.equal(await page.locator('[data-testid="key-row"]').count(), 50);

    // Spend: per day for everyone, a key and a team; the top model; the API's figures
    await page.locator('[data-testid="view-spend"]').click();
    const chart = (which) => page.locator(`[data-testid="days-${which}"]`);
    const total = (rep) => rep.groups.reduce((n, g) => n + g.cost_usd, 0);
    const requests = (rep) => rep.groups.reduce((n, g) => n + g.requests, 0);
    await chart('all').locator(`[data-testid="days-requests"][data-requests="${requests(all)}"]`).waitFor();
    assert.equal(await chart('all').locator('[data-testid="day-bar"]').count(), 7);
    assert.equal(Number(await chart('all').locator('[data-testid="days-cost"]').getAttribute('data-cost')), total(all));
    assert.match(await chart('all').locator('[data-testid="days-requests"]').innerText(), /^6 requests$/);

    /** A chart shows `rep`'s every day: each bar's cost and requests are the API's. */
    async function sameDays(which, rep) {
      await chart(which).locator(`[data-testid="days-cost"][data-cost="${total(rep)}"]`).waitFor();
      await chart(which).locator(`[data-testid="days-requests"][data-requests="${requests(rep)}"]`).waitFor();
      for (const g of rep.groups) {
        const bar = chart(which).locator(`[data-testid="day-bar"][data-day="${g.group}"]`);
        assert.equal(Number(await bar.getAttribute('data-cost')), g.cost_usd, `${which} ${g.group}`);
        assert.equal(Number(await bar.getAttribute('data-requests')), g.requests, `${which} ${g.group}`);
      }
      assert.ok(rep.groups.length >= 1 && rep.groups.some((g) => g.group === to), `${which} spent today`);
    }
    const topKey = byKey.groups[0].group;
    assert.equal(await page.locator('[data-testid="days-key-pick"]').inputValue(), topKey, 'the top key is shown first');
    await sameDays('key', topKey === 'alice' ? aliceDays : bobDays);
    const other = topKey === 'alice' ? 'bob' : 'alice';
    await page.locator('[data-testid="days-key-pick"]').selectOption(other);
    await sameDays('key', other === 'alice' ? aliceDays : bobDays);
    assert.match(await chart('key').locator('[data-testid="days-requests"]').innerText(), other === 'alice' ? /^4 requests$/ : /^2 requests$/);
    assert.equal(await page.locator('[data-testid="days-team-pick"]').inputValue(), 'research');
    await sameDays('team', teamDays);

    const topModel = page.locator('[data-testid="top-models"] [data-testid="top-row"]').first();
    assert.equal(await topModel.getAttribute('data-name'), byModel.groups[0].group);
    assert.equal(Number(await topModel.getAttribute('data-cost')), byModel.groups[0].cost_usd);
    assert.match(await topModel.locator('[data-testid="top-figures"]').innerText(), new RegExp(`^${byModel.groups[0].requests} requests? · `));
    assert.equal(await page.locator('[data-testid="top-models"] [data-testid="top-row"]').count(), byModel.groups.length);
    const topTeams = await page.locator('[data-testid="top-teams"] [data-testid="top-row"]').evaluateAll((rs) => rs.map((r) => r.dataset.name));
    assert.deepEqual(topTeams, byTeam.groups.map((g) => g.group));
    const topKeys = await page.locator('[data-testid="top-keys"] [data-testid="top-row"]').evaluateAll((rs) => rs.map((r) => r.dataset.name));
    assert.deepEqual(topKeys, byKey.groups.map((g) => g.group));
    const spendShot = join(ARTIFACTS, 'dashboard-spend.png');
    await page.screenshot({ path: spendShot, fullPage: true });
    if (process.env.SWITCHYARD_UPDATE_DOCS === '1') copyFileSync(spendShot, join(ROOT, 'docs/dashboard-spend.png'));

    // the period picker: 30 days
    await page.locator('[data-testid="period-30"]').click();
    await until('30 days drawn', UI_TIMEOUT_MS, async () => (await chart('all').locator('[data-testid="day-bar"]').count()) === 30);
    assert.match(await page.locator('#spend-range').innerText(), new RegExp(`^${lastDays(30).from} to ${to}`));

    // a phone: the views fit its width
    const phone = await newPage(chrome.context, { width: 390, height: 844 });
    await phone.page.goto(`${base}/#/spend`, { waitUntil: 'domcontentloaded' });
    await phone.page.locator('[data-testid="key-input"]').fill(admin);
    await phone.page.locator('[data-testid="key-submit"]').click();
    await phone.page.locator('[data-testid="days-all"] [data-testid="day-bar"]').first().waitFor();
    for (const view of ['spend', 'keys']) {
      if (view === 'keys') {
        await phone.page.locator('[data-testid="view-keys"]').click();
        await phone.page.locator('[data-testid="key-row"]').first().waitFor();
      }
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `the ${view} view is ${overflow}px wider than a phone`);
      await phone.page.screenshot({ path: join(ARTIFACTS, `dashboard-${view}-phone.png`), fullPage: true });
    }

    for (const s of [seen, phone.seen]) {
      assert.deepEqual([...s.hosts].filter((h) => !h.startsWith('127.0.0.1:')), [], 'the page requests nothing from elsewhere');
      // the prompt's first polls are refused (401) before the key is given
      assert.deepEqual(s.errors.filter((e) => !/status of 401/.test(e)), [], 'no script errors');
    }
    const html = await page.content();
    for (const secret of [admin, sha(admin), made.alice.key, made.bob.key]) {
      assert.ok(!html.includes(secret), 'no token or hash in the page');
    }
  } finally {
    await chrome?.close();
    await stopServer(server);
    dropDatabase(db.name);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with the database unreachable the views say so, and the overview still works', { timeout: 90_000 }, async () => {
  const admin = 'sy-browser-down-admin-51c9';
  const client = 'sy-browser-down-app-0b7e';
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-nodb-'));
  const config = join(dir, 'switchyard.toml');
  writeFileSync(config, `
[server]
request_log = "${join(dir, 'requests.jsonl')}"

[[providers]]
name = "aurora"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [5, 10]
seed = 1

[[routes]]
name = "default"
providers = ["aurora"]

[[keys]]
name = "ops"
sha256 = "${createHash('sha256').update(admin).digest('hex')}"
routes = []
admin = true

[[keys]]
name = "app"
sha256 = "${createHash('sha256').update(client).digest('hex')}"
routes = ["*"]

[database]
url_env = "SWITCHYARD_BROWSER_DATABASE_URL"
`);
  let server;
  let chrome;
  try {
    // nothing listens on port 9 of 127.0.0.1: the database is down from the start
    server = await startServer(['--config', config], { SWITCHYARD_BROWSER_DATABASE_URL: 'postgres://postgres@127.0.0.1:9/switchyard' });
    chrome = await openBrowser();
    const { page, seen } = await newPage(chrome.context, { width: 1200, height: 800 });
    await page.goto(`${server.base}/#/spend`, { waitUntil: 'domcontentloaded' });
    await page.locator('[data-testid="key-input"]').fill(admin);
    await page.locator('[data-testid="key-submit"]').click();
    const spendNotice = page.locator('[data-testid="spend-notice"][data-code="database_unavailable"]');
    await spendNotice.waitFor({ timeout: 15_000 });
    assert.match(await spendNotice.innerText(), /^The database is not answering right now/);
    assert.equal(await page.locator('#spend-period').isVisible(), true, 'the period can still be picked');
    await page.locator('[data-testid="view-keys"]').click();
    await page.locator('[data-testid="keys-notice"][data-code="database_unavailable"]').waitFor({ timeout: 15_000 });
    assert.equal(await page.locator('[data-testid="error-banner"]').isVisible(), false, 'no error banner');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-database-down.png') });
    assert.equal(await chat(server.base, { token: client }), 200, 'traffic is served');
    await page.locator('[data-testid="view-overview"]').click();
    await page.locator('[data-testid="provider-card"][data-provider="aurora"]').waitFor();
    assert.deepEqual([...seen.hosts].filter((h) => !h.startsWith('127.0.0.1:')), []);
    assert.deepEqual(seen.errors.filter((e) => !/status of (401|503)/.test(e)), [], 'no script errors');
  } finally {
    await chrome?.close();
    await stopServer(server);
    rmSync(dir, { recursive: true, force: true });
  }
});
