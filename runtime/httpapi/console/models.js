// Data models: custom record shapes of the workspace (/v1/admin/data-models…): a name and fields, each
// {type, label, required, options, target} under its key (the definitions' field types; a string with
// options is a select).
import { api, data } from './api.js';
import { h, table, field, formErrors, showError, clearErrors, values, busy, announce, button, when, uid, put, replace } from './ui.js';

const fieldTypes = ['string', 'text', 'integer', 'decimal', 'boolean', 'date', 'datetime', 'email', 'url', 'phone', 'reference'];

// fieldRow is one editable field of a model; its inputs are named fields.<n>.<member> so that a server
// error naming fields.<key>… lands on the row's box.
function fieldRow(list, f = {}) {
  const n = uid('mf');
  const row = h('fieldset', { class: 'model-field', 'data-row': n },
    h('legend', {}, f.key ? `Field ${f.key}` : 'New field'),
    field({ name: 'key', label: 'Key', value: f.key || '', required: true, attrs: { autocomplete: 'off' } }),
    field({ name: 'type', label: 'Type', type: 'select', options: fieldTypes.map((t) => [t, t]), value: f.type || 'string' }),
    field({ name: 'label', label: 'Label', value: f.label || '' }),
    field({ name: 'options', label: 'Options (comma-separated; makes a string a select)', value: (f.options || []).join(', ') }),
    field({ name: 'target', label: 'Target resource (reference)', value: f.target || '' }),
    field({ name: 'required', label: 'Required', type: 'checkbox', value: f.required }),
    button('Remove this field', () => { row.remove(); announce('Field removed from the form.'); }, { kind: 'secondary' }));
  put(list, row);
  return row;
}

function readFields(list) {
  const out = {};
  for (const row of list.querySelectorAll('fieldset')) {
    const v = {};
    for (const el of row.querySelectorAll('input, select')) v[el.name] = el.type === 'checkbox' ? el.checked : el.value.trim();
    if (!v.key) continue;
    const f = { type: v.type, label: v.label || v.key.replace(/_/g, ' '), required: v.required };
    const options = v.options.split(',').map((x) => x.trim()).filter(Boolean);
    if (options.length) f.options = options;
    if (v.target) f.target = v.target;
    out[v.key] = f;
  }
  return out;
}

function modelForm(model, onSaved) {
  const list = h('div', { class: 'model-fields' });
  const title = model ? `Edit ${model.name}` : 'New data model';
  const titleId = uid('model-form');
  const form = h('form', { class: 'form wide', noValidate: true, 'aria-labelledby': titleId },
    h('h2', { id: titleId }, title),
    formErrors(),
    field({ name: 'name', label: 'Name', value: model?.name || '', required: true }),
    h('div', { class: 'field', 'data-field': 'fields' }, h('p', { class: 'field-error', id: uid('fields-error') })),
    list,
    h('div', { class: 'actions' },
      button('Add a field', () => { fieldRow(list).querySelector('input').focus(); }, { attrs: { 'data-action': 'add-field' } }),
      h('button', { type: 'submit', class: 'button primary' }, model ? 'Save model' : 'Create model')));
  const fields = model?.fields || {};
  for (const [key, f] of Object.entries(fields)) fieldRow(list, { key, ...f });
  if (!model) fieldRow(list);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: values(form).name, fields: readFields(list) };
    await busy(form, async () => {
      try {
        const saved = data(model
          ? await api('PATCH', `/v1/admin/data-models/${encodeURIComponent(model.id)}`, body)
          : await api('POST', '/v1/admin/data-models', body));
        clearErrors(form);
        announce(`Saved the data model ${saved?.name || body.name}.`, 'ok');
        await onSaved(saved);
      } catch (err) {
        showError(form, err);
      }
    });
  });
  return form;
}

export async function render(el, ctx, { rest }) {
  if (rest[0]) {
    const m = data(await api('GET', `/v1/admin/data-models/${encodeURIComponent(rest[0])}`));
    put(el, h('p', {}, h('a', { href: '#/models' }, '← All data models')),
      h('p', { class: 'meta' }, 'Id ', h('code', {}, m.id), ` · records at /v1/data_model_records?model_id=${m.id}`),
      modelForm(m, async () => {}));
    return;
  }
  const out = h('div', {});
  const load = async () => {
    const list = data(await api('GET', '/v1/admin/data-models')) || [];
    replace(out, table(`Data models (${list.length})`, [
      { label: 'Name', cell: (m) => h('a', { href: `#/models/${encodeURIComponent(m.id)}` }, m.name) },
      { label: 'Fields', cell: (m) => Object.keys(m.fields || {}).join(', ') || '—' },
      { label: 'Id', cell: (m) => h('code', {}, m.id) },
      { label: 'Updated', cell: (m) => when(m.updated_at || m.created_at) },
    ], list, { empty: 'none yet.' }));
  };
  await load();
  put(el, h('p', {}, 'A data model is a record shape of this workspace; its records live in data_model_records with its id.'),
    out, modelForm(null, load));
}
