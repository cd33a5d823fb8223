// Catalog: each resource's fields, built-in and custom, as the workspace's API describes them
// (GET /v1/admin/resources, GET /v1/admin/resources/{resource}).
import { api, data } from './api.js';
import { h, table, yesNo, field, put, replace } from './ui.js';

// resourceNames lists the workspace's resources ([{name, label, read_only…}]), fetched once per page.
export async function resourceList() {
  const list = data(await api('GET', '/v1/admin/resources')) || [];
  return list.slice().sort((a, b) => String(a.label || a.name).localeCompare(String(b.label || b.name)));
}

// customFieldsTable shows custom fields as the catalog lists them: the write key (cf__<key>) and the
// filter and sort key (cfv:<id>).
export function customFieldsTable(caption, list, opts) {
  return table(caption, [
    { label: 'Key', cell: (f) => f.key },
    { label: 'Label', cell: (f) => f.label || '' },
    { label: 'Type', cell: (f) => f.custom_type || f.type },
    { label: 'Write key', cell: (f) => h('code', {}, f.write_key || `cf__${f.key}`) },
    { label: 'Filter key', cell: (f) => h('code', {}, f.filter_key || `cfv:${f.id}`) },
    { label: 'Required', cell: (f) => yesNo(f.required) },
    { label: 'Unique', cell: (f) => yesNo(f.unique) },
    { label: 'Options or target', cell: (f) => (f.options && f.options.length ? f.options.join(', ') : (f.target || '—')) },
  ], list, opts);
}

function fieldsTable(list) {
  return table('Built-in fields', [
    { label: 'Key', cell: (f) => f.key },
    { label: 'Label', cell: (f) => f.label || '' },
    { label: 'Type', cell: (f) => f.type + (f.max_length ? ` (≤ ${f.max_length})` : '') },
    { label: 'Required', cell: (f) => yesNo(f.required) },
    { label: 'Unique', cell: (f) => yesNo(f.unique) },
    { label: 'Writable', cell: (f) => yesNo(f.writable) },
    { label: 'Filter key', cell: (f) => (f.filterable ? h('code', {}, f.filter_key || f.key) : '—') },
    { label: 'Sortable', cell: (f) => yesNo(f.sortable) },
  ], list);
}

async function renderResource(el, name) {
  const r = data(await api('GET', `/v1/admin/resources/${encodeURIComponent(name)}`));
  put(el, 
    h('p', {}, h('a', { href: '#/catalog' }, '← All resources')),
    h('h2', { id: 'resource-title' }, `${r.label_plural || r.label || r.name} `, h('code', {}, r.name)),
    r.description ? h('p', {}, r.description) : null,
    h('p', { class: 'meta' }, `Path ${r.path || `/v1/${r.name}`} · operations: ${(r.operations || []).join(', ') || '—'}`),
    fieldsTable(r.fields || []),
    h('h3', {}, 'Custom fields'),
    customFieldsTable('Custom fields', r.custom_fields || [], { empty: 'none yet.' }),
    r.read_only ? null : h('p', {}, h('a', { class: 'button primary', href: `#/fields/new?resource=${encodeURIComponent(r.name)}` }, `Add a custom field to ${r.label_plural || r.name}`)),
    (r.associations || []).length ? table('Associations', [
      { label: 'Name', cell: (a) => a.name },
      { label: 'Target', cell: (a) => h('a', { href: `#/catalog/${encodeURIComponent(a.target)}` }, a.target) },
      { label: 'Path', cell: (a) => h('code', {}, a.path || '') },
    ], r.associations) : null,
  );
}

// customCount says how many custom fields a resource has (the admin list counts them; archived apart).
function customCount(r) {
  const n = typeof r.custom_fields === 'number' ? r.custom_fields : (r.custom_fields || []).length;
  return r.archived_custom_fields ? `${n} (${r.archived_custom_fields} archived)` : String(n);
}

export async function render(el, ctx, { rest }) {
  if (rest[0]) {
    await renderResource(el, rest[0]);
    return;
  }
  const list = await resourceList();
  const filter = field({ name: 'filter', label: 'Filter resources', type: 'search', hint: 'By name, label or group.' });
  const out = h('div', {});
  const draw = (q) => {
    const shown = list.filter((r) => !q || [r.name, r.label, r.label_plural, r.group].some((s) => String(s || '').toLowerCase().includes(q)));
    replace(out, table(`Resources (${shown.length})`, [
      { label: 'Resource', cell: (r) => h('a', { href: `#/catalog/${encodeURIComponent(r.name)}` }, r.label_plural || r.label || r.name) },
      { label: 'Name', cell: (r) => h('code', {}, r.name) },
      { label: 'Group', cell: (r) => r.group || '—' },
      { label: 'Custom fields', cell: (r) => (r.read_only ? 'read-only resource' : customCount(r)) },
    ], shown, { empty: 'no resource matches.' }));
  };
  filter.querySelector('input').addEventListener('input', (ev) => draw(ev.target.value.trim().toLowerCase()));
  draw('');
  put(el, h('p', {}, 'Every resource of this workspace, with its built-in fields and the custom fields added to it. Pick one to see its fields.'), filter, out);
}
