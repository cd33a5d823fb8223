// Usage: requests and refusals (403 and 429 answers) per day, and the workspace's monthly quota
// (GET /v1/admin/usage?from=D&to=D&key=K), as an SVG chart drawn here and as a table.
import { api, data, query } from './api.js';
import { h, table, field, values, announce, put, replace } from './ui.js';

function isoDay(d) {
  return d.toISOString().slice(0, 10);
}

// perDay sums the answer's rows (per key and day) by day, every day of [from, to] present.
export function perDay(rows, from, to) {
  const byDay = new Map();
  for (let d = new Date(`${from}T00:00:00Z`); isoDay(d) <= to; d.setUTCDate(d.getUTCDate() + 1)) {
    byDay.set(isoDay(d), { day: isoDay(d), requests: 0, refusals: 0 });
  }
  for (const r of rows) {
    const day = String(r.day || r.date || '').slice(0, 10);
    if (!byDay.has(day)) byDay.set(day, { day, requests: 0, refusals: 0 });
    const e = byDay.get(day);
    e.requests += Number(r.requests || 0);
    e.refusals += Number(r.refusals || 0);
  }
  return [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day));
}

// normalize reads the answer: rows per key and day, and the quota {limit, used, period}.
function normalize(body) {
  const d = data(body);
  const meta = (body && body.meta) || {};
  let rows = [];
  if (Array.isArray(d)) rows = d;
  else if (d && typeof d === 'object') rows = d.days || d.per_day || d.rows || d.usage || [];
  let quota = (d && !Array.isArray(d) && d.quota) || meta.quota || null;
  if (typeof quota === 'number') quota = { limit: quota };
  return { rows, quota };
}

const W = 720;
const H = 260;
const pad = { l: 48, r: 12, t: 16, b: 36 };

// niceMax is the axis's top: four steps of 1, 2 or 5 times a power of ten.
function niceMax(v) {
  const raw = Math.max(1, v) / 4;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  return Math.max(4, step * 4);
}

// chart draws grouped bars of requests and refusals per day.
function chart(days) {
  const max = niceMax(Math.max(1, ...days.map((d) => d.requests)));
  const iw = W - pad.l - pad.r;
  const ih = H - pad.t - pad.b;
  const slot = iw / Math.max(1, days.length);
  const bw = Math.max(1, slot * 0.4);
  const y = (v) => pad.t + ih - (v / max) * ih;
  const total = days.reduce((a, d) => a + d.requests, 0);
  const refused = days.reduce((a, d) => a + d.refusals, 0);
  const svg = h('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-labelledby': 'chart-title chart-desc', preserveAspectRatio: 'xMidYMid meet' },
    h('title', { id: 'chart-title' }, 'Requests and refusals per day'),
    h('desc', { id: 'chart-desc' }, `${days.length} days from ${days[0]?.day || ''} to ${days[days.length - 1]?.day || ''}: ${total} requests, ${refused} refused. The table below has every day's figures.`));
  for (let i = 0; i <= 4; i += 1) {
    const v = (max / 4) * i;
    put(svg, h('line', { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: 'grid' }),
      h('text', { x: pad.l - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' }, Math.round(v).toLocaleString('en')));
  }
  days.forEach((d, i) => {
    const x = pad.l + i * slot + (slot - 2 * bw) / 2;
    put(svg, h('rect', { x, y: y(d.requests), width: bw, height: Math.max(0, pad.t + ih - y(d.requests)), class: 'bar requests' }, h('title', {}, `${d.day}: ${d.requests} requests`)),
      h('rect', { x: x + bw, y: y(d.refusals), width: bw, height: Math.max(0, pad.t + ih - y(d.refusals)), class: 'bar refusals' }, h('title', {}, `${d.day}: ${d.refusals} refused`)));
    const every = Math.ceil(days.length / 8);
    if (i % every === 0) put(svg, h('text', { x: pad.l + i * slot + slot / 2, y: H - 12, class: 'axis', 'text-anchor': 'middle' }, d.day.slice(5)));
  });
  return svg;
}

// quotaBar draws this month's use against the monthly quota.
function quotaBar(q) {
  if (!q || !q.limit) {
    return h('p', {}, `This workspace's plan has no monthly quota${q && q.used != null ? `; ${q.used} requests this month` : ''}.`);
  }
  const used = Number(q.used || 0);
  const share = Math.min(1, used / q.limit);
  const svg = h('svg', { viewBox: '0 0 720 40', class: 'chart quota', role: 'img', 'aria-labelledby': 'quota-title', preserveAspectRatio: 'none' },
    h('title', { id: 'quota-title' }, `Monthly quota: ${used} of ${q.limit} requests used (${Math.round(share * 100)}%)`),
    h('rect', { x: 0, y: 8, width: 720, height: 24, class: 'quota-track', rx: 4 }),
    h('rect', { x: 0, y: 8, width: 720 * share, height: 24, class: share >= 0.9 ? 'quota-used high' : 'quota-used', rx: 4 }));
  return h('figure', { class: 'figure' }, svg,
    h('figcaption', {}, `Monthly quota: ${used.toLocaleString('en')} of ${Number(q.limit).toLocaleString('en')} requests${q.period || q.month ? ` (${q.period || q.month})` : ''}${q.resets_at ? `; resets ${q.resets_at.slice(0, 10)}` : ''}.`));
}

export async function render(el) {
  const today = new Date();
  const monthAgo = new Date(Date.now() - 29 * 86400000);
  const form = h('form', { class: 'filters', 'aria-label': 'Usage period' },
    field({ name: 'from', label: 'From', type: 'date', value: isoDay(monthAgo) }),
    field({ name: 'to', label: 'To', type: 'date', value: isoDay(today) }),
    field({ name: 'key', label: 'Key id', hint: 'Empty: every key.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Show')));
  const out = h('div', {});
  const load = async () => {
    const v = values(form);
    const { rows, quota } = normalize(await api('GET', `/v1/admin/usage${query({ from: v.from, to: v.to, key: v.key })}`));
    const days = perDay(rows, v.from, v.to);
    replace(out, 
      h('figure', { class: 'figure' }, chart(days),
        h('figcaption', {}, h('span', { class: 'swatch requests', 'aria-hidden': 'true' }), ' requests ',
          h('span', { class: 'swatch refusals', 'aria-hidden': 'true' }), ' refusals (403 and 429 answers), per UTC day')),
      quotaBar(quota),
      table('Requests and refusals per day', [
        { label: 'Day', cell: (d) => d.day },
        { label: 'Requests', cell: (d) => String(d.requests) },
        { label: 'Refusals', cell: (d) => String(d.refusals) },
      ], days.filter((d) => d.requests || d.refusals), { empty: 'no requests in this period.' }));
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await load();
    announce('Usage updated.');
  });
  await load();
  put(el, h('p', {}, 'Requests made with keys of this workspace; the console\'s own requests do not count against the quota.'), form, out);
}
