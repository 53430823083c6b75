// switchyard dashboard: the Keys and Spend views, read from the admin API over the database
// (/admin/keys, /admin/teams, /admin/spend; docs/operations.md "The admin API"). Loaded
// before dashboard.js, which calls the factory below with its helpers and asks for a view
// when its tab is shown. Like the rest of the page: no framework, nothing from elsewhere,
// and every value from the server goes into the page as text or SVG attributes, never HTML.
'use strict';

window.switchyardDatabaseViews = ({ h, s, replace, usd, stat, api, AuthError, askForKey }) => {
  const KEYS_PAGE = 50;
  const TEAMS_LISTED = 500; // the team filter's choices (the API's largest page)
  const PICKS = 200; // keys and teams offered in the per-day pickers
  const TOP = 10; // rows in a top-spenders card
  const REFRESH_MS = 15000; // a shown view is read again this often
  const META_CHARS = 80;
  const DAY_MS = 86400000;
  const $ = (id) => document.getElementById(id);

  const state = {
    keys: { team: '', revoked: false, afters: [0], next: null, loaded: 0, seq: 0 },
    spend: { days: 7, key: null, team: null, loaded: 0, seq: 0 },
  };

  // ---- formatting ----

  const count = (n) => Number(n).toLocaleString('en-US');
  const plural = (n, word) => `${count(n)} ${word}${n === 1 ? '' : 's'}`;
  /** `2026-12-02T20:31:07Z` as `2026-12-02 20:31 UTC` (anything else as it came). */
  const when = (t) => (/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(t) ? `${t.slice(0, 10)} ${t.slice(11, 16)} UTC` : String(t));
  const clip = (t, n) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);

  // ---- loading, and what a failure says ----

  const PLAIN = {
    database_not_configured:
      'This gateway has no database, so there are no virtual keys, teams or spend history to show. ' +
      'Configure [database] url_env to keep them in PostgreSQL (docs/operations.md, "Database"). ' +
      'The keys configured in the TOML and the spend since start are on the Overview.',
    database_unavailable:
      'The database is not answering right now. Keys are still served from memory and spend rows wait on ' +
      'disk until it is back; this view asks again every 15 s while it is shown.',
  };

  /** Show (or, with no error, clear) a view's notice; the view's body hides while it has nothing to show. */
  function notice(name, err) {
    const el = $(`${name}-notice`);
    const st = state[name];
    const noDatabase = Boolean(err) && err.code === 'database_not_configured';
    for (const c of document.querySelectorAll(`[data-controls="${name}"]`)) c.hidden = noDatabase;
    if (!err) {
      el.hidden = true;
      el.textContent = '';
      delete el.dataset.code;
      $(`${name}-body`).hidden = false;
      return;
    }
    const code = err.code || 'error';
    el.dataset.code = code;
    el.classList.toggle('bad', !noDatabase);
    el.textContent = PLAIN[code] || `Cannot read the ${name}: ${err.message}`;
    el.hidden = false;
    // figures read before an outage stay up under the notice; none at all: nothing under it
    $(`${name}-body`).hidden = noDatabase || !st.shown;
  }

  function failed(name, e) {
    state[name].loaded = Date.now(); // a refusal is not asked again on every poll
    if (e instanceof AuthError) askForKey(e);
    else notice(name, e);
  }

  /** Replace a select's options only when they changed (a user's open list stays open). */
  function fillSelect(select, options, chosen) {
    const sig = JSON.stringify(options);
    if (select.dataset.sig !== sig) {
      replace(select, options.map(([value, text]) => h('option', { value }, text)));
      select.dataset.sig = sig;
    }
    select.value = chosen ?? '';
  }

  // ---- keys ----

  async function loadKeys() {
    const k = state.keys;
    const seq = ++k.seq;
    const q = new URLSearchParams({ limit: String(KEYS_PAGE) });
    const after = k.afters[k.afters.length - 1];
    if (after) q.set('after', String(after));
    if (k.team) q.set('team', k.team);
    if (k.revoked) q.set('revoked', 'true');
    try {
      const [page, teams] = await Promise.all([api(`/admin/keys?${q}`), api(`/admin/teams?limit=${TEAMS_LISTED}`)]);
      if (seq !== k.seq) return;
      k.loaded = Date.now();
      k.next = page.has_more ? page.next_after : null;
      k.shown = true;
      notice('keys', null);
      const names = teams.data.map((t) => t.name);
      if (k.team && !names.includes(k.team)) names.push(k.team);
      fillSelect($('keys-team'), [['', 'all teams'], ...names.map((n) => [n, n])], k.team);
      drawKeys(page.data);
    } catch (e) {
      if (seq === k.seq) failed('keys', e);
    }
  }

  function drawKeys(list) {
    const k = state.keys;
    const first = (k.afters.length - 1) * KEYS_PAGE;
    const empty = $('keys-empty');
    empty.hidden = list.length > 0;
    empty.textContent = k.team ? `No keys in team ${k.team}.` : 'No keys yet: create one with POST /admin/keys.';
    const now = Date.now();
    replace($('keys-rows'), list.map((key) => keyRow(key, now)));
    $('keys-page').textContent = list.length ? `keys ${first + 1}–${first + list.length}${k.next === null ? '' : ' · more follow'}` : '';
    $('keys-prev').disabled = k.afters.length <= 1;
    $('keys-next').disabled = k.next === null;
  }

  function budgetText(k) {
    if (k.budget_usd === null || k.budget_usd === undefined) return 'none';
    return `${usd(k.budget_usd)} ${k.budget_period === 'total' ? 'in total' : `per ${k.budget_period}`}`;
  }

  function keyRow(k, now) {
    const routes = (k.routes || []).includes('*') ? 'all routes' : (k.routes || []).join(', ');
    const meta = JSON.stringify(k.metadata ?? {});
    const expired = k.expires_at && Date.parse(k.expires_at) <= now;
    const graceOn = k.previous_valid_until && Date.parse(k.previous_valid_until) > now;
    return h('tr', { 'data-testid': 'key-row', 'data-id': k.id, 'data-name': k.name, 'data-team': k.team || '', class: k.revoked_at ? 'revoked' : null },
      h('td', {}, h('strong', {}, k.name),
        graceOn ? h('span', { class: 'tag', title: `the token before the last rotation works until ${when(k.previous_valid_until)}` }, 'rotating') : null),
      h('td', { 'data-testid': 'key-team' }, k.team || '–'),
      h('td', { title: clip(routes, 2000) }, clip(routes, 48)),
      h('td', { 'data-testid': 'key-budget' }, budgetText(k)),
      h('td', {}, `${k.rpm ?? '–'} / ${k.tpm ?? '–'}`),
      h('td', {}, k.expires_at ? [when(k.expires_at), expired ? h('span', { class: 'tag' }, 'expired') : null] : 'never'),
      h('td', { 'data-testid': 'key-revoked' }, k.revoked_at ? when(k.revoked_at) : 'no'),
      h('td', {}, when(k.created_at)),
      h('td', { class: 'meta mono hide-sm', 'data-testid': 'key-metadata', title: meta === '{}' ? null : clip(meta, 2000) },
        meta === '{}' ? '–' : clip(meta, META_CHARS)));
  }

  // ---- spend ----

  /** The last `days` UTC days, today included. */
  function period(days) {
    const day = (ms) => new Date(ms).toISOString().slice(0, 10);
    const now = Date.now();
    return { from: day(now - (days - 1) * DAY_MS), to: day(now) };
  }

  /** Every UTC day from `from` to `to` (`YYYY-MM-DD`), at most a year of them. */
  function dayList(from, to) {
    const at = (d) => Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)) - 1, Number(d.slice(8, 10)));
    const out = [];
    for (let t = at(from); t <= at(to) && out.length < 366; t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
    return out;
  }

  async function loadSpend() {
    const sp = state.spend;
    const seq = ++sp.seq;
    const { from, to } = period(sp.days);
    const range = `from=${from}&to=${to}`;
    const report = (q) => api(`/admin/spend?${range}&${q}`);
    try {
      const [all, keys, teams, models] = await Promise.all([
        report('group_by=day'),
        report(`group_by=key&limit=${PICKS}`),
        report(`group_by=team&limit=${PICKS}`),
        report(`group_by=model&limit=${TOP}`),
      ]);
      if (seq !== sp.seq) return;
      const keyNames = keys.groups.map((g) => g.group).filter(Boolean);
      const teamNames = teams.groups.map((g) => g.group).filter(Boolean);
      if (!keyNames.includes(sp.key)) sp.key = keyNames[0] ?? null;
      if (!teamNames.includes(sp.team)) sp.team = teamNames[0] ?? null;
      const [keyDays, teamDays] = await Promise.all([
        sp.key === null ? null : report(`group_by=day&key=${encodeURIComponent(sp.key)}`),
        sp.team === null ? null : report(`group_by=day&team=${encodeURIComponent(sp.team)}`),
      ]);
      if (seq !== sp.seq) return;
      sp.loaded = Date.now();
      sp.shown = true;
      notice('spend', null);
      fillSelect($('days-key-pick'), keyNames.map((n) => [n, n]), sp.key);
      fillSelect($('days-team-pick'), teamNames.map((n) => [n, n]), sp.team);
      $('days-key-pick').disabled = !keyNames.length;
      $('days-team-pick').disabled = !teamNames.length;
      drawSpend({ all, keys, teams, models, keyDays, teamDays });
    } catch (e) {
      if (seq === sp.seq) failed('spend', e);
    }
  }

  function drawSpend(r) {
    const sum = (field) => r.all.groups.reduce((n, g) => n + g[field], 0);
    $('spend-range').textContent = `${r.all.from} to ${r.all.to} (UTC days) · from the daily aggregates`;
    replace($('spend-totals'),
      stat(usd(sum('cost_usd')), `spend in ${state.spend.days} days`, 'spend-total'),
      stat(count(sum('requests')), 'answered requests', 'spend-requests'),
      stat(count(sum('input_tokens')), 'input tokens', 'spend-input'),
      stat(count(sum('output_tokens')), 'output tokens', 'spend-output'),
      stat(count(sum('unpriced')), 'unpriced requests (cost unknown)', 'spend-unpriced'));
    replace($('days-all'), dayChart(r.all));
    replace($('days-key'), r.keyDays ? dayChart(r.keyDays) : h('p', { class: 'muted' }, 'No key spent anything in this period.'));
    replace($('days-team'), r.teamDays ? dayChart(r.teamDays) : h('p', { class: 'muted' }, 'No team spent anything in this period.'));
    replace($('spend-top'),
      topCard('Models', 'top-models', r.models.groups, '(model unknown)'),
      topCard('Keys', 'top-keys', r.keys.groups, '(no key)'),
      topCard('Teams', 'top-teams', r.teams.groups, '(no team)'));
  }

  /** A bar per UTC day (cost), the period's totals under it. */
  function dayChart(rep) {
    const W = 600;
    const H = 110;
    const by = new Map(rep.groups.map((g) => [g.group, g]));
    const days = dayList(rep.from, rep.to);
    const peak = Math.max(0, ...rep.groups.map((g) => g.cost_usd));
    const step = W / Math.max(days.length, 1);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': `spend per day, ${rep.from} to ${rep.to}` });
    days.forEach((d, i) => {
      const g = by.get(d);
      const cost = g ? g.cost_usd : 0;
      const height = Math.max(g ? 2 : 1, peak > 0 ? (cost / peak) * (H - 6) : 0);
      const tip = g
        ? `${d}: ${usd(cost)} · ${plural(g.requests, 'request')} · ${count(g.input_tokens)} tokens in, ${count(g.output_tokens)} out${g.unpriced ? ` · ${g.unpriced} unpriced` : ''}`
        : `${d}: no spend`;
      svg.append(s('rect', {
        class: g ? 'daybar' : 'daybar zero', 'data-testid': 'day-bar', 'data-day': d, 'data-cost': cost, 'data-requests': g ? g.requests : 0,
        x: (i * step + step * 0.12).toFixed(2), width: (step * 0.76).toFixed(2), y: (H - height).toFixed(2), height: height.toFixed(2),
      }, s('title', {}, tip)));
    });
    const cost = rep.groups.reduce((n, g) => n + g.cost_usd, 0);
    const requests = rep.groups.reduce((n, g) => n + g.requests, 0);
    const top = rep.groups[0]; // largest cost first
    return [
      svg,
      h('div', { class: 'axis-row' }, h('span', {}, rep.from), h('span', {}, peak > 0 ? `top ${usd(peak)} a day` : ''), h('span', {}, rep.to)),
      h('div', { class: 'legend', 'data-testid': 'days-legend' },
        h('strong', { 'data-testid': 'days-cost', 'data-cost': cost }, usd(cost)), ' · ',
        h('span', { 'data-testid': 'days-requests', 'data-requests': requests }, plural(requests, 'request')),
        top ? ` · busiest ${top.group}` : ' · nothing spent'),
    ];
  }

  function topCard(title, testid, groups, blank) {
    const rows = groups.slice(0, TOP);
    const most = Math.max(0, ...rows.map((g) => g.cost_usd));
    return h('div', { class: 'card', 'data-testid': testid }, h('h3', {}, title),
      rows.length ? rows.map((g) => {
        const share = h('span', { class: 'spent' });
        share.style.width = `${most > 0 ? (g.cost_usd / most) * 100 : 0}%`;
        return h('div', { class: 'budget top-line', 'data-testid': 'top-row', 'data-name': g.group, 'data-cost': g.cost_usd, 'data-requests': g.requests },
          h('div', { class: 'line' }, h('strong', {}, g.group || blank),
            h('span', { 'data-testid': 'top-cost' }, usd(g.cost_usd),
              g.unpriced ? h('span', { class: 'flag', title: 'cost unknown: not counted as $0' }, ` + ${g.unpriced} unpriced`) : null)),
          h('div', { class: 'bar' }, share),
          h('div', { class: 'figures', 'data-testid': 'top-figures' },
            `${plural(g.requests, 'request')} · ${count(g.input_tokens)} tokens in · ${count(g.output_tokens)} out`));
      }) : h('p', { class: 'muted' }, 'Nothing spent in this period.'));
  }

  // ---- controls ----

  $('keys-team').addEventListener('change', (e) => {
    Object.assign(state.keys, { team: e.target.value, afters: [0], next: null });
    loadKeys();
  });
  $('keys-revoked').addEventListener('change', (e) => {
    Object.assign(state.keys, { revoked: e.target.checked, afters: [0], next: null });
    loadKeys();
  });
  $('keys-next').addEventListener('click', () => {
    if (state.keys.next === null) return;
    state.keys.afters.push(state.keys.next);
    loadKeys();
  });
  $('keys-prev').addEventListener('click', () => {
    if (state.keys.afters.length <= 1) return;
    state.keys.afters.pop();
    loadKeys();
  });
  $('spend-period').addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    state.spend.days = Number(b.dataset.days);
    for (const x of $('spend-period').querySelectorAll('button')) x.classList.toggle('on', x === b);
    loadSpend();
  });
  $('days-key-pick').addEventListener('change', (e) => {
    state.spend.key = e.target.value;
    loadSpend();
  });
  $('days-team-pick').addEventListener('change', (e) => {
    state.spend.team = e.target.value;
    loadSpend();
  });

  const load = { keys: loadKeys, spend: loadSpend };
  return {
    /** Read view `name` now. */
    show(name) {
      load[name]();
    },
    /** Read view `name` again if it was last read more than [`REFRESH_MS`] ago. */
    tick(name) {
      if (Date.now() - state[name].loaded > REFRESH_MS) load[name]();
    },
  };
};
