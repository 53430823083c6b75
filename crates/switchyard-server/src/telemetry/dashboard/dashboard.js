// switchyard dashboard: polls the admin JSON and draws it. No framework, no build step,
// no requests to anywhere but this server. Every value from the server is put into the
// page with textContent or SVG attributes, never as HTML.
'use strict';

(() => {
  const POLL_MS = 2000;
  const KEY_STORE = 'switchyard.adminKey';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const REQUESTS_SHOWN = 50;

  const $ = (id) => document.getElementById(id);
  const view = {
    paused: false,
    timer: null,
    selected: null, // request id whose attempts are shown
    span: 'auto', // timeline range
    last: null, // the last overview + transitions, to redraw on zoom
    tab: 'overview', // the view shown: overview, keys or spend
    db: null, // the Keys and Spend views (database.js)
  };
  const TABS = ['overview', 'keys', 'spend'];

  // ---- small DOM helpers ----

  /** An element with attributes (`class`, `data-*`, ...) and children (nodes or text). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    setAttrs(el, attrs);
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined) continue;
      el.append(c instanceof Node ? c : String(c));
    }
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }

  function replace(el, ...children) {
    el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
  }

  // ---- formatting ----

  const pad = (n) => String(n).padStart(2, '0');
  function clock(ms) {
    const d = new Date(ms);
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  function ago(at, now) {
    const secs = Math.round((at - now) / 1000);
    if (Math.abs(secs) < 90) return secs >= 0 ? `in ${secs} s` : `${-secs} s ago`;
    const m = Math.round(secs / 60);
    return m >= 0 ? `in ${m} min` : `${-m} min ago`;
  }
  function usd(v) {
    if (v === null || v === undefined) return 'unknown';
    if (v === 0) return '$0';
    if (Math.abs(v) < 0.01) {
      const digits = Math.min(12, 1 - Math.floor(Math.log10(Math.abs(v))));
      return `$${v.toFixed(digits).replace(/0+$/, '')}`;
    }
    return `$${v.toFixed(v < 100 ? 4 : 2).replace(/0+$/, '').replace(/\.$/, '')}`;
  }
  function ms(v) {
    if (v === null || v === undefined) return '–';
    return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`;
  }
  const label = (state) => ({ closed: 'closed', open: 'open', half_open: 'half-open', auth_failed: 'auth failed' }[state] || state);
  const kindText = (k) => String(k).replace(/_/g, ' ');

  // ---- the admin API ----

  class AuthError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** Any other refusal, with the error's `code` (e.g. database_not_configured). */
  class ApiFailure extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path) {
    const headers = { Accept: 'application/json' };
    const key = sessionStorage.getItem(KEY_STORE);
    if (key) headers.Authorization = `Bearer ${key}`;
    const resp = await fetch(path, { headers, cache: 'no-store', credentials: 'omit' });
    let body = null;
    try {
      body = await resp.json();
    } catch (_) {
      body = null;
    }
    if (resp.status === 401 || resp.status === 403) {
      throw new AuthError(resp.status, (body && body.error && body.error.message) || resp.statusText);
    }
    if (!resp.ok) {
      const msg = (body && body.error && body.error.message) || `${resp.status} ${resp.statusText}`;
      throw new ApiFailure(resp.status, body && body.error && body.error.code, `${path}: ${msg}`);
    }
    return body;
  }

  // ---- polling ----

  async function refresh() {
    clearTimeout(view.timer);
    try {
      const [overview, transitions, requests] = await Promise.all([
        api('/admin/overview'),
        api('/admin/transitions'),
        api(`/admin/requests?limit=${REQUESTS_SHOWN}`),
      ]);
      showMain();
      view.last = { overview, transitions };
      draw(overview, transitions, requests);
      banner(null);
      $('updated').textContent = `updated ${clock(overview.now_ms)}`;
      if (view.tab !== 'overview') view.db.tick(view.tab);
    } catch (e) {
      if (e instanceof AuthError) {
        askForKey(e);
        return; // polling resumes once a key is given
      }
      banner(`Cannot reach the admin API: ${e.message}`);
    }
    schedule();
  }

  function schedule() {
    clearTimeout(view.timer);
    if (!view.paused) view.timer = setTimeout(refresh, POLL_MS);
  }

  function banner(text) {
    const b = $('banner');
    b.hidden = !text;
    b.textContent = text || '';
  }

  function showMain() {
    $('login').hidden = true;
    $('main').hidden = false;
    $('forget').hidden = !sessionStorage.getItem(KEY_STORE);
  }

  function askForKey(err) {
    $('main').hidden = true;
    $('login').hidden = false;
    const had = sessionStorage.getItem(KEY_STORE);
    let msg = 'This gateway has client keys configured. Enter a key with admin = true; it is kept in this tab only (sessionStorage).';
    if (err.status === 403) msg = 'That key is valid but is not an admin key (admin = true). Enter an admin key.';
    else if (had) msg = 'That key was not accepted. Enter an admin key.';
    $('login-msg').textContent = msg;
    $('updated').textContent = 'admin key needed';
    $('key-input').focus();
  }

  // ---- drawing ----

  function draw(o, t, r) {
    drawFleet(o.fleet, o.now_ms);
    drawTotals(o);
    drawRoutes(o);
    drawProviders(o);
    drawTimeline(o, t);
    drawSpend(o);
    drawRequests(r.requests, o.now_ms);
  }

  function drawFleet(f, now) {
    const el = $('fleet');
    let text = `state: ${f.backend} · ${f.connected ? 'connected' : 'degraded'}`;
    if (!f.connected && f.degraded_since_ms) text += ` since ${clock(f.degraded_since_ms)} (${ago(f.degraded_since_ms, now)})`;
    el.textContent = text;
    el.className = `pill ${f.connected ? 'ok' : 'bad'}`;
    el.dataset.connected = String(f.connected);
    el.title = f.last_error ? `last error: ${f.last_error}` : `state backend: ${f.backend}`;
  }

  function stat(value, text, testid) {
    return h('div', { class: 'card stat', 'data-testid': testid }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, text));
  }

  function drawTotals(o) {
    const open = o.providers.filter((p) => p.circuit.state !== 'closed').length;
    const failovers = o.providers.reduce((n, p) => n + p.failovers_to, 0);
    replace(
      $('totals'),
      stat(o.totals.requests, 'answers served', 'total-requests'),
      stat(failovers, 'answered after failover', 'total-failovers'),
      stat(`${open} / ${o.providers.length}`, 'circuits not closed', 'total-open'),
      stat(usd(o.totals.spend_usd), 'spend (priced calls)', 'total-spend'),
      stat(o.totals.unpriced_calls, 'unpriced calls', 'total-unpriced'),
    );
  }

  function drawRoutes(o) {
    const states = Object.fromEntries(o.providers.map((p) => [p.name, p.circuit.state]));
    replace(
      $('routes'),
      o.routes.map((r) => {
        const chain = [];
        r.providers.forEach((p, i) => {
          if (i > 0) chain.push(h('span', { class: 'arrow', 'aria-hidden': 'true' }, '→'));
          chain.push(h('span', { class: `pill state-${states[p] || 'closed'}`, title: label(states[p] || '') }, p));
        });
        const meta = [`order: ${r.order}`, `deadline ${ms(r.deadline_ms)}`];
        if (r.budget) meta.push(`budget ${usd(r.budget.spent_usd)} of ${usd(r.budget.limit_usd)}`);
        return h('div', { class: 'card route', 'data-testid': 'route', 'data-route': r.name },
          h('span', { class: 'name' }, r.name), chain, h('span', { class: 'meta' }, meta.join(' · ')));
      }),
    );
  }

  function circuitText(c, now) {
    if (c.state === 'open' && c.open_until_ms) return `open until ${clock(c.open_until_ms)} (${ago(c.open_until_ms, now)})`;
    if (c.state === 'half_open') return c.probe_in_flight ? 'half-open · probe in flight' : 'half-open · next request probes';
    if (c.state === 'auth_failed') return 'auth failed · check the key';
    return label(c.state);
  }

  function reasonLine(c, now) {
    const parts = [];
    if (c.state !== 'closed' && c.opened_by) parts.push(h('span', {}, 'tripped by ', h('strong', {}, kindText(c.opened_by))));
    if (c.last_error) parts.push(h('span', {}, `${parts.length ? ' · ' : ''}last error: ${kindText(c.last_error)}`));
    if (c.consecutive_failures) parts.push(h('span', {}, ` · ${c.consecutive_failures} failed turn${c.consecutive_failures === 1 ? '' : 's'} in a row`));
    if (c.cooling_until_ms && c.cooling_until_ms > now) parts.push(h('span', {}, ` · cooling (Retry-After) until ${clock(c.cooling_until_ms)}`));
    if (!parts.length) parts.push('no failures recorded');
    return parts;
  }

  /** The last active health check: probe, result, latency, when. */
  function checkLine(k, now) {
    const result = k.ok ? 'ok' : `${kindText(k.result)}${k.status ? ` (${k.status})` : ''}`;
    return h('div', { class: 'reason', 'data-testid': 'health-check', 'data-result': k.result },
      `health check (${k.probe}): `, h('strong', {}, result), ` · ${ms(k.latency_ms)} · ${ago(k.at_ms, now)}`);
  }

  function count(value, text, testid) {
    return h('div', { 'data-testid': testid }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, text));
  }

  function drawProviders(o) {
    replace($('providers'), o.providers.map((p) => providerCard(p, o.now_ms)));
  }

  function providerCard(p, now) {
    const c = p.circuit;
    const errors = Object.entries(p.errors || {});
    const skips = Object.entries(p.skipped || {});
    const unpriced = p.unpriced_calls > 0 || !p.priced;
    return h('article', { class: `card provider is-${c.state}`, 'data-testid': 'provider-card', 'data-provider': p.name },
      h('div', { class: 'provider-head' },
        h('div', {}, h('h3', {}, p.name), h('div', { class: 'sub' }, `${p.kind} · ${p.model}`)),
        h('span', { class: `pill state-${c.state}`, 'data-testid': 'circuit-state', 'data-state': c.state }, circuitText(c, now))),
      h('div', { class: 'reason', 'data-testid': 'circuit-reason' }, reasonLine(c, now)),
      p.health_check ? checkLine(p.health_check, now) : null,
      h('div', { class: 'counts' },
        count(p.requests, 'answers', 'provider-requests'),
        count(p.attempts, 'tries', 'provider-attempts'),
        count(p.failovers_from, 'failed over from', 'failovers-from'),
        count(p.failovers_to, 'failed over to', 'failovers-to')),
      h('div', { class: 'chips', 'data-testid': 'provider-errors', 'aria-label': 'errors by kind' },
        errors.length ? errors.map(([k, n]) => h('span', { class: 'chip', 'data-kind': k }, `${kindText(k)} ${n}`)) : h('span', { class: 'muted' }, 'no errors'),
        skips.map(([k, n]) => h('span', { class: 'chip skip', 'data-skip': k }, `skipped: ${kindText(k)} ${n}`))),
      h('div', { class: 'charts' },
        chart('latency', p.latency, 'latency-chart'),
        chart('time to first token', p.ttft, 'ttft-chart')),
      h('div', { class: 'spendline', 'data-testid': 'provider-spend' },
        h('span', {}, 'spend ', h('strong', {}, usd(p.spend_usd)), h('span', { class: 'muted' }, ` · ${p.input_tokens + p.output_tokens} tokens`),
          p.health_spend_usd ? h('span', { class: 'muted', 'data-testid': 'health-spend' }, ` · health checks ${usd(p.health_spend_usd)} (not in budgets)`) : null),
        unpriced ? h('span', { class: 'flag', 'data-testid': 'unpriced-flag', title: 'cost unknown: not counted as $0' },
          p.priced ? `${p.unpriced_calls} unpriced` : `unpriced model · ${p.unpriced_calls} call${p.unpriced_calls === 1 ? '' : 's'}`) : null));
  }

  /** A small chart: the newest samples as dots, p50 and p95 as lines. */
  function chart(title, stats, testid) {
    const W = 240;
    const H = 64;
    const pts = stats.points || [];
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': `${title}: p50 ${ms(stats.p50_ms)}, p95 ${ms(stats.p95_ms)}` });
    if (pts.length) {
      const top = Math.max(...pts.map((q) => q[1]), stats.p95_ms || 0) * 1.15 || 1;
      const y = (v) => (H - 4 - (v / top) * (H - 10)).toFixed(1);
      const step = pts.length > 1 ? (W - 8) / (pts.length - 1) : 0;
      pts.forEach((q, i) => svg.append(s('circle', { class: 'dot', cx: (4 + i * step).toFixed(1), cy: y(q[1]), r: 1.8 })));
      if (stats.p50_ms !== null) svg.append(s('line', { class: 'line-p50', x1: 0, x2: W, y1: y(stats.p50_ms), y2: y(stats.p50_ms) }));
      if (stats.p95_ms !== null) svg.append(s('line', { class: 'line-p95', x1: 0, x2: W, y1: y(stats.p95_ms), y2: y(stats.p95_ms) }));
    } else {
      svg.append(s('text', { class: 'axis', x: W / 2, y: H / 2 + 3, 'text-anchor': 'middle' }, 'no samples'));
    }
    return h('div', { class: 'chart', 'data-testid': testid, 'data-samples': stats.samples },
      h('div', { class: 'title' }, h('span', {}, title), h('span', {}, `${stats.samples} sample${stats.samples === 1 ? '' : 's'}`)),
      svg,
      h('div', { class: 'legend' },
        h('span', { class: 'p50', 'data-testid': `${testid}-p50` }, `p50 ${ms(stats.p50_ms)}`), ' · ',
        h('span', { class: 'p95', 'data-testid': `${testid}-p95` }, `p95 ${ms(stats.p95_ms)}`)));
  }

  // ---- circuit timeline ----

  /** The range drawn: as chosen, or (auto) the history so far, from 15 s to 1 hour. */
  function timelineSpan(t) {
    if (view.span !== 'auto') return Number(view.span);
    const lived = t.now_ms - t.since_ms;
    const unit = lived < 120000 ? 15000 : 60000;
    return Math.min(t.window_ms, Math.max(15000, Math.ceil((lived * 1.1) / unit) * unit));
  }

  function spanText(span) {
    if (span >= 3600000) return 'last hour';
    if (span < 120000) return `last ${Math.round(span / 1000)} s`;
    return `last ${Math.round(span / 60000)} minutes`;
  }

  function drawTimeline(o, t) {
    const span = timelineSpan(t);
    const start = t.now_ms - span;
    const n = t.transitions.length;
    $('timeline-range').textContent = `${spanText(span)} · ${n} transition${n === 1 ? '' : 's'} in the last hour`;
    const names = o.providers.map((p) => p.name);
    const now = Object.fromEntries(t.providers.map((p) => [p.name, p.state]));
    const openUntil = Object.fromEntries(t.providers.map((p) => [p.name, p.open_until_ms]));
    const LABEL = 90;
    const W = Math.max(320, Math.round($('timeline').clientWidth - 30) || 1000);
    const LANE = 22;
    const H = names.length * LANE + 18;
    const x = (ms) => LABEL + ((Math.max(ms, start) - start) / span) * (W - LABEL - 4);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'circuit states over time' });
    for (let i = 0; i <= 4; i++) {
      const at = start + (span * i) / 4;
      svg.append(s('line', { class: 'tick', x1: x(at), x2: x(at), y1: 0, y2: H - 14 }));
      svg.append(s('text', { class: 'axis', x: x(at), y: H - 3, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle' }, clock(at)));
    }
    names.forEach((name, lane) => {
      const y = lane * LANE + 3;
      svg.append(s('text', { class: 'lane-label', x: 0, y: y + 12 }, name));
      const mine = t.transitions.filter((tr) => tr.provider === name);
      let state = mine.length ? mine[0].from : stateOf(now[name]);
      let from = Math.max(start, t.since_ms); // nothing is known before the history began
      for (const tr of mine) {
        if (tr.at_ms > start) svg.append(segment(state, x(from), x(tr.at_ms), y, LANE));
        state = tr.to;
        from = Math.max(tr.at_ms, start);
      }
      // An open circuit turns half-open by the clock; that step is recorded only when a
      // probe is admitted, so until then the cooldown's end marks it.
      const halfAt = state === 'open' && now[name] === 'half_open' ? openUntil[name] : null;
      if (halfAt && halfAt > from) {
        svg.append(segment('open', x(from), x(halfAt), y, LANE));
        from = Math.max(halfAt, start);
      }
      svg.append(segment(now[name] || state, x(from), x(t.now_ms), y, LANE));
      mine.filter((tr) => tr.at_ms >= start).forEach((tr) => {
        svg.append(s('line', { class: 'mark', x1: x(tr.at_ms), x2: x(tr.at_ms), y1: y - 1, y2: y + LANE - 5 },
          s('title', {}, `${clock(tr.at_ms)} ${name}: ${label(tr.from)} → ${label(tr.to)}${tr.cause ? ` (${kindText(tr.cause)})` : ''}`)));
      });
    });
    replace($('timeline'), svg);
    const rows = t.transitions.slice().reverse().map((tr) =>
      h('li', { 'data-testid': 'transition-row', 'data-provider': tr.provider, 'data-to': tr.to },
        h('span', { class: 'when' }, clock(tr.at_ms)),
        h('span', { class: 'who' }, tr.provider),
        h('span', {}, h('span', { class: `pill state-${tr.from}` }, label(tr.from)), ' → ', h('span', { class: `pill state-${tr.to}` }, label(tr.to))),
        h('span', { class: 'muted' }, tr.cause ? `cause: ${kindText(tr.cause)}` : '')));
    replace($('transitions'), rows.length ? rows : [h('li', { class: 'muted' }, 'No circuit changed state in the last hour.')]);
  }

  const stateOf = (healthState) => (healthState === 'auth_failed' ? 'open' : healthState || 'closed');

  function segment(state, x1, x2, y, lane) {
    const w = Math.max(x2 - x1, 0.5);
    return s('rect', { class: `seg-${state}`, x: x1.toFixed(1), y, width: w.toFixed(1), height: lane - 6, rx: 2 });
  }

  // ---- spend ----

  function budgetRow(name, b, extra, testid) {
    const limit = b.limit_usd || 0;
    const spentPct = limit > 0 ? Math.min(100, (b.spent_usd / limit) * 100) : 100;
    const resPct = limit > 0 ? Math.min(100 - spentPct, (b.reserved_usd / limit) * 100) : 0;
    const spent = h('span', { class: 'spent' });
    spent.style.width = `${spentPct}%`;
    const reserved = h('span', { class: 'reserved' });
    reserved.style.width = `${resPct}%`;
    const over = b.remaining_usd <= 0;
    return h('div', { class: 'budget', 'data-testid': testid, 'data-name': name },
      h('div', { class: 'line' }, h('strong', {}, name), h('span', {}, `${usd(b.spent_usd)} of ${usd(limit)}${extra}`)),
      h('div', { class: `bar${over ? ' over' : ''}`, role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(spentPct) }, spent, reserved),
      h('div', { class: 'muted' }, `${usd(b.remaining_usd)} left${b.reserved_usd > 0 ? ` · ${usd(b.reserved_usd)} reserved in flight` : ''}`));
  }

  function drawSpend(o) {
    const total = o.providers.reduce((n, p) => n + p.spend_usd, 0);
    const providers = h('div', { class: 'card', 'data-testid': 'spend-providers' }, h('h3', {}, 'By provider'),
      o.providers.map((p) => {
        const share = h('span', { class: 'spent' });
        share.style.width = `${total > 0 ? (p.spend_usd / total) * 100 : 0}%`;
        return h('div', { class: 'budget', 'data-testid': 'spend-provider', 'data-name': p.name },
          h('div', { class: 'line' }, h('strong', {}, p.name), h('span', {}, usd(p.spend_usd),
            p.unpriced_calls > 0 ? h('span', { class: 'flag', 'data-testid': 'unpriced-flag' }, ` + ${p.unpriced_calls} unpriced`) : null)),
          h('div', { class: 'bar' }, share));
      }));
    const routes = o.routes.filter((r) => r.budget);
    const routeCard = h('div', { class: 'card', 'data-testid': 'spend-routes' }, h('h3', {}, 'Route budgets'),
      routes.length ? routes.map((r) => budgetRow(r.name, r.budget, '', 'budget-route')) : h('p', { class: 'muted' }, 'No route has a budget.'));
    const keyCard = h('div', { class: 'card', 'data-testid': 'spend-keys' }, h('h3', {}, 'Client keys'),
      o.keys.length ? o.keys.map((k) => keyRow(k)) : h('p', { class: 'muted' }, 'No client keys configured (loopback only).'));
    replace($('spend'), providers, routeCard, keyCard);
  }

  function keyRow(k) {
    const extra = [k.admin ? 'admin' : null, k.rpm ? `${k.rpm} rpm` : null, k.tpm ? `${k.tpm} tpm` : null].filter(Boolean).join(' · ');
    if (k.budget) return budgetRow(k.name, k.budget, ` per ${k.budget.period}${extra ? ` · ${extra}` : ''}`, 'budget-key');
    return h('div', { class: 'budget', 'data-testid': 'budget-key', 'data-name': k.name },
      h('div', { class: 'line' }, h('strong', {}, k.name), h('span', {}, `${usd(k.spent_usd)} since start · no budget`)),
      h('div', { class: 'muted' }, `${k.requests} requests${k.unpriced_calls ? ` · ${k.unpriced_calls} unpriced` : ''}${extra ? ` · ${extra}` : ''}`));
  }

  // ---- recent requests ----

  /** A rescue that diverged or was declined is the rescue's failure, not the provider's. */
  const RESCUE_OUTCOMES = ['rescue', 'diverged', 'declined'];

  function outcomeClass(a) {
    if (RESCUE_OUTCOMES.includes(a.outcome)) return 'rescue';
    return a.outcome === 'success' ? 'success' : a.outcome === 'skipped' ? 'skipped' : 'failed';
  }

  function outcomeText(a) {
    if (a.outcome === 'failed') return `failed: ${kindText(a.kind)}`;
    if (a.outcome === 'skipped') return `skipped: ${kindText(a.reason)}`;
    if (a.outcome === 'rescue') return `rescue: ${a.method}`;
    if (a.outcome === 'diverged') return `restart diverged at character ${a.at} of ${a.sent}: not spliced`;
    if (a.outcome === 'declined') return `continuation declined: ${kindText(a.kind)}`;
    return 'success';
  }

  function trail(attempts) {
    return h('span', { class: 'trail', 'data-testid': 'trail' },
      attempts.map((a) => h('span', { class: `step ${outcomeClass(a)}`, 'data-outcome': a.outcome, title: `${a.provider}: ${outcomeText(a)}` }, a.provider)));
  }

  function drawRequests(list, now) {
    $('requests-empty').hidden = list.length > 0;
    replace($('requests'), list.map((r) => {
      const tr = h('tr', { 'data-testid': 'request-row', 'data-request-id': r.id, tabindex: 0, class: r.id === view.selected ? 'selected' : null, title: ago(r.time_ms, now) },
        h('td', {}, clock(r.time_ms)),
        h('td', {}, r.route, r.stream ? h('span', { class: 'tag' }, 'stream') : null),
        h('td', { class: 'hide-sm' }, r.key || '–'),
        h('td', { class: r.status < 400 && !r.error ? 'status-ok' : 'status-bad' }, r.status, r.error ? ` ${r.error}` : ''),
        h('td', {}, r.provider || '–', r.failed_over ? h('span', { class: 'tag', 'data-testid': 'failed-over' }, 'failed over') : null),
        h('td', {}, trail(r.attempts)),
        h('td', { class: 'num' }, Math.round(r.latency_ms)),
        h('td', { class: 'num hide-sm' }, r.provider ? usd(r.cost_usd) : '–'));
      tr.addEventListener('click', () => select(r.id));
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          select(r.id);
        }
      });
      return tr;
    }));
  }

  async function select(id) {
    view.selected = id;
    for (const row of document.querySelectorAll('[data-testid="request-row"]')) {
      row.classList.toggle('selected', row.dataset.requestId === id);
    }
    const panel = $('detail');
    try {
      const { request } = await api(`/admin/requests/${encodeURIComponent(id)}`);
      drawDetail(request);
    } catch (e) {
      if (e instanceof AuthError) return askForKey(e);
      replace(panel, h('p', { class: 'muted' }, e.message));
      panel.hidden = false;
    }
  }

  function drawDetail(r) {
    const panel = $('detail');
    const close = h('button', { type: 'button', class: 'ghost', 'aria-label': 'close' }, '×');
    close.addEventListener('click', () => {
      view.selected = null;
      panel.hidden = true;
      panel.parentElement.classList.remove('has-detail');
      for (const row of document.querySelectorAll('tr.selected')) row.classList.remove('selected');
    });
    const facts = [
      ['id', r.id], ['time', `${new Date(r.time_ms).toLocaleString()}`], ['route', r.route], ['key', r.key || '–'],
      ['status', `${r.status}${r.error ? ` (${r.error})` : ''}`], ['answered by', r.provider ? `${r.provider} (${r.model || '?'})` : '–'],
      ['failed over', r.failed_over ? 'yes' : 'no'], ['latency', ms(r.latency_ms)], ['first token', r.stream ? ms(r.ttft_ms) : '–'],
      ['tokens', r.usage ? `${r.usage.input_tokens} in · ${r.usage.output_tokens} out` : '–'], ['cost', r.provider ? usd(r.cost_usd) : '–'],
    ];
    replace(panel,
      h('h3', {}, h('span', {}, 'Request ', h('small', { class: 'mono' }, r.id)), close),
      h('dl', {}, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      h('h3', {}, `Attempts (${r.attempts.length})`),
      h('ol', { class: 'attempts', 'data-testid': 'attempt-list' }, r.attempts.map((a, i) =>
        h('li', { class: outcomeClass(a), 'data-testid': 'attempt-row', 'data-provider': a.provider, 'data-outcome': a.outcome },
          h('div', { class: 'head' },
            h('strong', {}, `${i + 1}. ${a.provider}`),
            h('span', {}, outcomeText(a)),
            h('span', { class: 'muted' }, `${a.attempt ? `try ${a.attempt}` : 'not called'}${a.status ? ` · HTTP ${a.status}` : ''} · ${ms(a.latency_ms)}`)),
          h('div', { class: 'muted' }, a.model),
          a.message ? h('div', { class: 'msg' }, a.message) : null))));
    panel.hidden = false;
    panel.parentElement.classList.add('has-detail');
  }

  // ---- views ----

  /** The view a location hash names (`#/keys`), else the overview. */
  function tabOf(hash) {
    const name = hash.replace(/^#\/?/, '');
    return TABS.includes(name) ? name : 'overview';
  }

  /** Show view `name`; Keys and Spend are read from the database when shown. */
  function showTab(name) {
    view.tab = name;
    for (const a of $('views').querySelectorAll('a')) a.setAttribute('aria-selected', String(a.dataset.view === name));
    for (const t of TABS) $(`panel-${t}`).hidden = t !== name;
    if (name === 'overview') {
      if (view.last) drawTimeline(view.last.overview, view.last.transitions); // its width was unknown while hidden
    } else if (!$('main').hidden) {
      view.db.show(name);
    }
  }

  // ---- controls ----

  function wire() {
    $('login-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const key = $('key-input').value.trim();
      if (!key) return;
      sessionStorage.setItem(KEY_STORE, key);
      $('key-input').value = '';
      refresh();
    });
    $('forget').addEventListener('click', () => {
      sessionStorage.removeItem(KEY_STORE);
      refresh();
    });
    $('pause').addEventListener('click', (e) => {
      view.paused = !view.paused;
      e.target.textContent = view.paused ? 'Resume' : 'Pause';
      e.target.setAttribute('aria-pressed', String(view.paused));
      if (view.paused) clearTimeout(view.timer);
      else refresh();
    });
    $('zoom').addEventListener('click', (e) => {
      const b = e.target.closest('button');
      if (!b) return;
      view.span = b.dataset.span;
      for (const x of $('zoom').querySelectorAll('button')) x.classList.toggle('on', x === b);
      if (view.last) drawTimeline(view.last.overview, view.last.transitions);
    });
  }

  document.addEventListener('DOMContentLoaded', () => {
    wire();
    view.db = window.switchyardDatabaseViews({ h, s, replace, usd, stat, api, AuthError, askForKey });
    window.addEventListener('hashchange', () => showTab(tabOf(location.hash)));
    showTab(tabOf(location.hash));
    refresh();
  });
})();
