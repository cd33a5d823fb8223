// Jobs: every member's bulk imports and exports of the workspace, newest first (GET /v1/admin/jobs),
// with their progress read again every 2 seconds while one is under way; cancel an unfinished job,
// download a completed export's file (GET /v1/admin/jobs/{id}/download, the session's cookie).
import { api, data, download, query } from './api.js';
import { h, table, announce, when, button, confirmInline, put, replace } from './ui.js';

const active = new Set(['open', 'queued', 'running']);

// emails names a job's creator when the admin may list members.
let emails = new Map();

function progressCell(j) {
  const p = j.progress || {};
  const c = j.counts || {};
  const label = `${j.type} of ${j.resource}, ${j.state}`;
  const bar = typeof p.fraction === 'number'
    ? h('progress', { max: 1, value: p.fraction, 'aria-label': `${label}: ${Math.round(p.fraction * 100)}%` })
    : h('progress', { 'aria-label': `${label}: under way` });
  const parts = [`read ${c.read ?? 0}`, `written ${c.written ?? 0}`, `failed ${c.failed ?? 0}`];
  if (c.unchanged) parts.push(`unchanged ${c.unchanged}`);
  if (typeof j.rows_per_second === 'number' && j.state === 'running') parts.push(`${Math.round(j.rows_per_second).toLocaleString('en')} rows/s`);
  if (j.state === 'running' && typeof p.seconds_left === 'number') parts.push(`about ${Math.ceil(p.seconds_left)} s left`);
  if (j.state === 'open') parts.unshift(`upload: ${j.upload?.parts ?? 0} parts, ${(j.upload?.bytes ?? 0).toLocaleString('en')} bytes, not closed yet`);
  return h('div', { class: 'job-progress' }, ['queued', 'running', 'completed'].includes(j.state) ? bar : null,
    h('span', { class: 'meta' }, parts.join(', ')),
    j.error ? h('span', { class: 'field-error' }, j.error) : null);
}

function actions(j, reload) {
  const box = h('div', { class: 'row-actions' });
  if (active.has(j.state)) {
    const cancel = async () => {
      try {
        await api('POST', `/v1/admin/jobs/${encodeURIComponent(j.id)}/cancel`);
        announce(`Cancelled the ${j.type} of ${j.resource}.`, 'ok');
        await reload();
      } catch (err) {
        announce(err.message, 'error');
      }
    };
    put(box, button(`Cancel the ${j.type} of ${j.resource}`, () => confirmInline(box, `Cancel this ${j.type}? What it committed stays.`, 'Cancel the job', cancel), { kind: 'danger', attrs: { 'data-action': 'cancel', 'data-job': j.id } }));
  }
  if (j.type === 'export' && j.state === 'completed') {
    const name = `${j.resource}-${j.id}.${j.format}`;
    const get = button(`Download the ${j.resource} export (${j.format.toUpperCase()})`, async () => {
      get.disabled = true;
      try {
        const size = await download(`/v1/admin/jobs/${encodeURIComponent(j.id)}/download`, name);
        get.dataset.downloaded = String(size);
        announce(`Downloaded ${name} (${size.toLocaleString('en')} bytes).`, 'ok');
      } catch (err) {
        announce(err.message, 'error');
      } finally {
        get.disabled = false;
      }
    }, { attrs: { 'data-action': 'download', 'data-job': j.id } });
    put(box, get);
  }
  if (j.type === 'import' && (j.counts?.failed || 0) > 0) {
    put(box, h('span', { class: 'hint' }, `Failed rows: GET /v1/jobs/${j.id}/failures, or recordsctl jobs failures ${j.id}`));
  }
  return box;
}

export async function render(el) {
  const region = h('div', {});
  const count = h('p', { class: 'meta', 'aria-live': 'polite' });
  let timer = null;
  const load = async () => {
    const answer = await api('GET', `/v1/admin/jobs${query({ limit: 100 })}`);
    const list = data(answer) || [];
    const under = list.filter((j) => active.has(j.state)).length;
    count.textContent = `${list.length} jobs${answer?.meta?.has_more ? ' (the newest 100)' : ''}; ${under} under way.`;
    replace(region, table('Bulk jobs, newest first', [
      { label: 'Started', cell: (j) => when(j.created_at) },
      { label: 'Job', cell: (j) => h('span', {}, `${j.type} · ${j.resource} · ${j.format.toUpperCase()}`, j.dry_run ? ' · dry run' : '', h('br', {}), h('code', {}, j.id)) },
      { label: 'State', cell: (j) => h('span', { class: `state ${j.state}`, 'data-state': j.state }, j.state) },
      { label: 'Progress', cell: progressCell },
      { label: 'By', cell: (j) => emails.get(j.created_by) || j.created_by },
      { label: 'Actions', cell: (j) => actions(j, load) },
    ], list, { empty: 'no imports or exports yet. Start one with POST /v1/jobs or recordsctl jobs import.' }));
    return under;
  };
  const tick = async () => {
    timer = null;
    if (!el.isConnected) return; // another page is shown
    try {
      if (await load()) timer = window.setTimeout(tick, 2000);
    } catch (err) {
      announce(err.message, 'error');
    }
  };
  try {
    emails = new Map((data(await api('GET', '/v1/admin/members')) || []).map((m) => [m.id, m.email]));
  } catch (err) {
    emails = new Map();
  }
  const under = await load();
  put(el, h('p', {}, 'Imports and exports run in the background on the servers; their progress is read again every 2 seconds while one is under way. A job, its results and its file are kept 7 days after it ends.'),
    count, region, h('p', {}, button('Refresh', () => tick(), { attrs: { 'data-action': 'refresh' } })));
  if (under) timer = window.setTimeout(tick, 2000);
  return () => { if (timer) window.clearTimeout(timer); };
}
