// Audit: the workspace's trail, newest first, as recordsctl audit list shows it (with the reader's
// masks), filtered and paged with meta.next_cursor (GET /v1/admin/audit).
import { api, data, query } from './api.js';
import { h, field, values, announce, when, button, put, replace } from './ui.js';

function changes(e) {
  const c = e.changes || {};
  const keys = Object.keys(c);
  if (!keys.length) return '—';
  const shown = keys.slice(0, 4).map((k) => `${k}: ${typeof c[k] === 'object' ? JSON.stringify(c[k]) : c[k]}`).join('; ');
  return keys.length > 4 ? `${shown}; and ${keys.length - 4} more` : shown;
}

// who names an entry's author: the member's email when the admin may list members.
let emails = new Map();

function row(e) {
  return h('tr', {},
    h('th', { scope: 'row' }, when(e.created_at)),
    h('td', {}, e.action),
    h('td', {}, e.resource),
    h('td', {}, h('code', {}, e.record_id || '—')),
    h('td', {}, emails.get(e.member_id) || e.member_id || (e.key_id ? `key ${e.key_id}` : 'operator')),
    h('td', { class: 'wrap' }, changes(e)));
}

export async function render(el) {
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the audit trail' },
    field({ name: 'resource', label: 'Resource', hint: 'e.g. companies, admin.custom_fields' }),
    field({ name: 'record_id', label: 'Record id' }),
    field({ name: 'since', label: 'Since', type: 'datetime-local' }),
    field({ name: 'limit', label: 'Per page', type: 'select', options: [['10', '10'], ['25', '25'], ['50', '50'], ['100', '100']], value: '25' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Show')));
  const body = h('tbody', {});
  const tbl = h('div', { class: 'scroll', tabIndex: 0, role: 'region', 'aria-label': 'Audit entries' },
    h('table', {}, h('caption', {}, 'Audit entries, newest first'),
      h('thead', {}, h('tr', {}, ['When', 'Action', 'Resource', 'Record', 'By', 'Changes'].map((l) => h('th', { scope: 'col' }, l)))),
      body));
  const count = h('p', { class: 'meta' });
  const more = button('Load more', () => page(), { attrs: { hidden: true, 'data-action': 'more' } });
  let cursor = null;
  let shown = 0;
  const params = () => {
    const v = values(form);
    return { resource: v.resource, record_id: v.record_id, since: v.since ? new Date(v.since).toISOString() : '', limit: v.limit };
  };
  const page = async (fresh = false) => {
    const answer = await api('GET', `/v1/admin/audit${query({ ...params(), cursor: fresh ? '' : cursor })}`);
    const list = data(answer) || [];
    if (fresh) {
      replace(body);
      shown = 0;
    }
    put(body, ...list.map(row));
    shown += list.length;
    cursor = answer?.meta?.next_cursor || null;
    more.hidden = !cursor;
    count.textContent = `${shown} entries shown${cursor ? '; more are older' : ''}.`;
    announce(`${list.length} entries loaded.`);
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await page(true);
  });
  try {
    emails = new Map((data(await api('GET', '/v1/admin/members')) || []).map((m) => [m.id, m.email]));
  } catch (err) {
    emails = new Map();
  }
  await page(true);
  put(el, h('p', {}, 'Every write of the workspace, the admin API\'s included (resources admin.…), with who made it.'), form, count, tbl, more);
}
