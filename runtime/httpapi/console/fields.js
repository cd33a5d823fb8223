// Custom fields: list, create (with a live preview of the catalog entry and of the keys the API takes),
// edit, archive and restore (/v1/admin/custom-fields…).
import { api, data, query } from './api.js';
import { h, table, field, formErrors, showError, clearErrors, values, busy, announce, button, yesNo, confirmInline, put, replace } from './ui.js';
import { resourceList, customFieldsTable } from './catalog.js';

// types are the custom field types (runtime/customfields.Types) with the value type and length the
// catalog gives them.
const types = [
  ['text', 'Text', 'string', 255], ['long_text', 'Long text', 'text', 100000], ['integer', 'Integer', 'integer', 0],
  ['decimal', 'Decimal', 'decimal', 0], ['boolean', 'Yes/no', 'boolean', 0], ['date', 'Date', 'date', 0],
  ['datetime', 'Date and time', 'datetime', 0], ['select', 'Select (one option)', 'string', 255],
  ['multi_select', 'Multi-select', 'multi_select', 0], ['email', 'Email', 'email', 254], ['url', 'URL', 'url', 2048],
  ['phone', 'Phone', 'phone', 50], ['reference', 'Reference to a record', 'reference', 0],
];
const uniqueTypes = new Set(['text', 'select', 'email', 'phone', 'integer', 'decimal', 'date', 'datetime', 'reference']);
const keyPattern = /^[a-z][a-z0-9_]{0,62}$/;

function splitOptions(s) {
  return String(s || '').split(/[\n,]/).map((x) => x.trim()).filter(Boolean);
}

// preview is the catalog entry the form describes, as GET /v1/resources/{resource} will list it.
function preview(v) {
  const t = types.find((x) => x[0] === v.type) || types[0];
  const entry = {
    key: v.key || '',
    label: v.label || (v.key || '').replace(/_/g, ' '),
    type: t[2],
    custom_type: t[0],
    write_key: `cf__${v.key || '<key>'}`,
    filter_key: 'cfv:<id>',
    required: !!v.required,
    unique: !!v.unique,
  };
  if (t[3]) entry.max_length = t[3];
  if (v.type === 'select' || v.type === 'multi_select') entry.options = splitOptions(v.options);
  if (v.type === 'reference') entry.target = v.target || '';
  if (v.description) entry.description = v.description;
  return entry;
}

function createForm(el, resources, preset) {
  const resourceOptions = resources.filter((r) => !r.read_only).map((r) => [r.name, `${r.label_plural || r.label || r.name} (${r.name})`]);
  const form = h('form', { class: 'form', noValidate: true, 'aria-labelledby': 'create-field-title' },
    h('h2', { id: 'create-field-title' }, 'New custom field'),
    formErrors(),
    field({ name: 'resource', label: 'Resource', type: 'select', options: resourceOptions, value: preset || resourceOptions[0]?.[0], required: true }),
    field({ name: 'key', label: 'Key', required: true, hint: 'Lowercase snake_case, at most 63 characters: written as cf__<key>.', attrs: { autocomplete: 'off', spellcheck: false } }),
    field({ name: 'type', label: 'Type', type: 'select', options: types.map(([v, l]) => [v, l]), value: 'text', required: true }),
    field({ name: 'label', label: 'Label', hint: 'Shown to people; the key with spaces when empty.' }),
    field({ name: 'description', label: 'Description', type: 'textarea', rows: 2 }),
    field({ name: 'options', label: 'Options', type: 'textarea', rows: 3, hint: 'Select and multi-select only: one per line or comma-separated.' }),
    field({ name: 'target', label: 'Target resource', type: 'select', options: [['', '—'], ...resources.map((r) => [r.name, r.name])], hint: 'Reference only: the resource whose records it points to.' }),
    field({ name: 'required', label: 'Required on create', type: 'checkbox' }),
    field({ name: 'unique', label: 'Unique key (at most one active record holds each value)', type: 'checkbox' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Create field'), h('a', { href: '#/fields', class: 'button secondary' }, 'Cancel')));

  const keysOut = h('dl', { class: 'keys' });
  const entryOut = h('div', {});
  const jsonOut = h('pre', { class: 'code', tabIndex: 0, 'aria-label': 'Catalog entry as JSON' });
  const notes = h('ul', { class: 'hints' });
  const side = h('section', { class: 'preview', 'aria-labelledby': 'preview-title' },
    h('h2', { id: 'preview-title' }, 'Preview'),
    h('p', { class: 'hint' }, 'What the catalog and the API will show, as you type.'),
    keysOut, entryOut, jsonOut, notes);

  const show = (box, on) => { form.querySelector(`[data-field="${box}"]`).hidden = !on; };
  const update = () => {
    const v = values(form);
    const e = preview(v);
    show('options', v.type === 'select' || v.type === 'multi_select');
    show('target', v.type === 'reference');
    show('unique', uniqueTypes.has(v.type));
    replace(keysOut, 
      h('dt', {}, 'Write key (create, update, upsert)'), h('dd', {}, h('code', { 'data-preview': 'write-key' }, e.write_key)),
      h('dt', {}, 'Filter and sort key'), h('dd', {}, h('code', { 'data-preview': 'filter-key' }, e.filter_key), ' — the id is given when the field is created'),
      h('dt', {}, 'Example filter'), h('dd', {}, h('code', {}, `GET /v1/${v.resource}?filter=[{"field":"cfv:<id>","op":"eq","value":…}]`), ' (URL-encoded)'));
    replace(entryOut, customFieldsTable('Catalog entry', [e]));
    jsonOut.textContent = JSON.stringify(e, null, 2);
    const problems = [];
    if (v.key && !keyPattern.test(v.key)) problems.push('The key must start with a lowercase letter and use a–z, 0–9 and _ only (at most 63).');
    if ((v.type === 'select' || v.type === 'multi_select') && !splitOptions(v.options).length) problems.push('A select needs at least one option.');
    if (v.type === 'reference' && !v.target) problems.push('A reference needs a target resource.');
    replace(notes, ...problems.map((p) => h('li', {}, p)));
  };
  form.addEventListener('input', update);
  form.addEventListener('change', update);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = values(form);
    const body = { resource: v.resource, key: v.key, type: v.type };
    if (v.label) body.label = v.label;
    if (v.description) body.description = v.description;
    if (v.required) body.required = true;
    if (v.unique && uniqueTypes.has(v.type)) body.unique = true;
    if (v.type === 'select' || v.type === 'multi_select') body.options = splitOptions(v.options);
    if (v.type === 'reference' && v.target) body.target = v.target;
    await busy(form, async () => {
      try {
        const made = data(await api('POST', '/v1/admin/custom-fields', body));
        clearErrors(form);
        announce(`Created ${made.write_key || `cf__${made.key}`} on ${made.resource || v.resource}.`, 'ok');
        replace(el, created(made, v.resource));
        el.querySelector('h2')?.focus();
      } catch (err) {
        showError(form, err);
      }
    });
  });
  update();
  return h('div', { class: 'split' }, form, side);
}

function created(f, resource) {
  const r = f.resource || resource;
  return h('section', { class: 'notice ok', 'aria-labelledby': 'created-title', 'data-created-field': f.key, 'data-field-id': f.id },
    h('h2', { id: 'created-title', tabIndex: -1 }, `Custom field ${f.key} created`),
    h('dl', { class: 'keys' },
      h('dt', {}, 'Write key'), h('dd', {}, h('code', {}, f.write_key || `cf__${f.key}`)),
      h('dt', {}, 'Filter and sort key'), h('dd', {}, h('code', {}, f.filter_key || `cfv:${f.id}`)),
      h('dt', {}, 'Id'), h('dd', {}, h('code', {}, f.id))),
    h('p', {}, h('a', { href: `#/catalog/${encodeURIComponent(r)}` }, `See it in the ${r} catalog`), ' · ',
      h('a', { href: '#/fields' }, 'All custom fields'), ' · ',
      h('a', { href: `#/fields/new?resource=${encodeURIComponent(r)}` }, 'Add another')));
}

async function editPage(el, id) {
  const f = data(await api('GET', `/v1/admin/custom-fields/${encodeURIComponent(id)}`));
  const selectable = f.type === 'select' || f.type === 'multi_select';
  const form = h('form', { class: 'form', noValidate: true, 'aria-labelledby': 'edit-title' },
    h('h2', { id: 'edit-title' }, `Edit ${f.resource}.`, h('code', {}, f.key)),
    h('p', { class: 'meta' }, `Type ${f.type}; write key `, h('code', {}, f.write_key || `cf__${f.key}`), '; filter key ', h('code', {}, f.filter_key || `cfv:${f.id}`),
      f.archived || f.archived_at ? '; archived' : ''),
    formErrors(),
    field({ name: 'label', label: 'Label', value: f.label }),
    field({ name: 'description', label: 'Description', type: 'textarea', rows: 2, value: f.description || '' }),
    selectable ? field({ name: 'options', label: 'Options', type: 'textarea', rows: 3, value: (f.options || []).join('\n'), hint: 'One per line. Removing an option keeps the values already stored.' }) : null,
    field({ name: 'required', label: 'Required on create', type: 'checkbox', value: f.required }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Save'), h('a', { href: '#/fields', class: 'button secondary' }, 'Back to the list')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = values(form);
    const body = { label: v.label, description: v.description, required: v.required };
    if (selectable) body.options = splitOptions(v.options);
    await busy(form, async () => {
      try {
        await api('PATCH', `/v1/admin/custom-fields/${encodeURIComponent(f.id)}`, body);
        clearErrors(form);
        announce(`Saved ${f.key}.`, 'ok');
      } catch (err) {
        showError(form, err);
      }
    });
  });
  put(el, form);
}

async function listPage(el, ctx, q) {
  const resources = await resourceList();
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter custom fields' },
    field({ name: 'resource', label: 'Resource', type: 'select', options: [['', 'All resources'], ...resources.filter((r) => !r.read_only).map((r) => [r.name, r.name])], value: q.get('resource') || '' }),
    field({ name: 'archived', label: 'Archived fields (instead of active ones)', type: 'checkbox', value: q.get('archived') === 'true' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Show')));
  const out = h('div', {});
  const load = async () => {
    const v = values(filters);
    const list = data(await api('GET', `/v1/admin/custom-fields${query({ resource: v.resource, archived: v.archived ? 'true' : '' })}`)) || [];
    replace(out, table(`Custom fields (${list.length})`, [
      { label: 'Field', cell: (f) => h('a', { href: `#/fields/${encodeURIComponent(f.id)}` }, `${f.resource}.${f.key}`) },
      { label: 'Label', cell: (f) => f.label || '' },
      { label: 'Type', cell: (f) => f.type },
      { label: 'Write key', cell: (f) => h('code', {}, f.write_key || `cf__${f.key}`) },
      { label: 'Filter key', cell: (f) => h('code', {}, f.filter_key || `cfv:${f.id}`) },
      { label: 'Required', cell: (f) => yesNo(f.required) },
      { label: 'State', cell: (f) => (f.archived || f.archived_at ? 'archived' : 'active') },
      { label: 'Actions', cell: (f) => actions(f, load) },
    ], list, { empty: 'none. Create one below.' }));
  };
  filters.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await load();
    announce('Custom fields updated.');
  });
  await load();
  put(el, 
    h('p', {}, 'Fields a workspace adds to a resource. They are written as ', h('code', {}, 'cf__<key>'), ' and filtered and sorted by ', h('code', {}, 'cfv:<id>'), '.'),
    h('p', {}, h('a', { class: 'button primary', href: '#/fields/new' }, 'New custom field')),
    filters, out);
}

function actions(f, reload) {
  const box = h('div', { class: 'row-actions' });
  const act = async (verb) => {
    try {
      await api('POST', `/v1/admin/custom-fields/${encodeURIComponent(f.id)}/${verb}`);
      announce(`${verb === 'archive' ? 'Archived' : 'Restored'} ${f.key}.`, 'ok');
      await reload();
    } catch (err) {
      announce(err.message, 'error');
    }
  };
  if (f.archived || f.archived_at) put(box, button(`Restore ${f.key}`, () => act('restore'), { attrs: { 'data-action': 'restore' } }));
  else {
    put(box, button(`Archive ${f.key}`, () => confirmInline(box, `Archive ${f.key}? Its values are kept.`, 'Archive', () => act('archive')), { kind: 'danger', attrs: { 'data-action': 'archive' } }));
  }
  return box;
}

export async function render(el, ctx, { rest, query: q }) {
  if (rest[0] === 'new') {
    put(el, createForm(el, await resourceList(), q.get('resource')));
    return;
  }
  if (rest[0]) {
    await editPage(el, rest[0]);
    return;
  }
  await listPage(el, ctx, q);
}
