// Members and roles (/v1/admin/members…, /v1/admin/roles…): change a member's role, deactivate and
// activate; list the roles, create and update the workspace's own.
import { api, data } from './api.js';
import { h, table, field, formErrors, showError, clearErrors, values, busy, announce, button, when, confirmInline, uid, put, replace } from './ui.js';

function memberName(m) {
  const name = [m.first_name, m.last_name].filter(Boolean).join(' ');
  return name ? `${name} <${m.email}>` : m.email || m.id;
}

function roleControl(m, roles, reload) {
  const id = uid('role');
  const select = h('select', { id, name: 'role' }, roles.map((r) => h('option', { value: r.name, selected: r.name === m.role }, r.label ? `${r.label} (${r.name})` : r.name)));
  const save = button(`Change the role of ${m.email}`, async () => {
    save.disabled = true;
    try {
      await api('PATCH', `/v1/admin/members/${encodeURIComponent(m.id)}`, { role: select.value });
      announce(`${m.email} now has the role ${select.value}.`, 'ok');
      await reload();
    } catch (err) {
      announce(err.message, 'error');
      select.value = m.role;
    } finally {
      save.disabled = false;
    }
  });
  save.dataset.action = 'set-role';
  return h('div', { class: 'inline' }, h('label', { for: id, class: 'visually-hidden' }, `Role of ${m.email}`), select, save);
}

function activeControl(m, reload) {
  const box = h('div', { class: 'row-actions' });
  const act = async (verb) => {
    try {
      await api('POST', `/v1/admin/members/${encodeURIComponent(m.id)}/${verb}`);
      announce(`${verb === 'deactivate' ? 'Deactivated' : 'Activated'} ${m.email}.`, 'ok');
      await reload();
    } catch (err) {
      announce(err.message, 'error');
    }
  };
  if (m.active === false) put(box, button(`Activate ${m.email}`, () => act('activate')));
  else put(box, button(`Deactivate ${m.email}`, () => confirmInline(box, `Deactivate ${m.email}? Their keys are revoked and their sessions end.`, 'Deactivate', () => act('deactivate')), { kind: 'danger' }));
  return box;
}

function roleForm(permissions, role, reload) {
  const titleId = uid('role-form');
  const form = h('form', { class: 'form', noValidate: true, 'aria-labelledby': titleId },
    h('h3', { id: titleId }, role ? `Edit the role ${role.name}` : 'New workspace role'),
    formErrors(),
    role ? null : field({ name: 'name', label: 'Name', required: true, hint: 'Lowercase snake_case.' }),
    field({ name: 'label', label: 'Label', value: role?.label || '' }),
    field({ name: 'description', label: 'Description', type: 'textarea', rows: 2, value: role?.description || '' }),
    h('fieldset', { class: 'field', 'data-field': 'permissions' },
      h('legend', {}, 'Permissions'),
      h('p', { class: 'field-error', id: uid('perm-error') }),
      permissions.map((p) => field({ name: `perm:${p}`, label: p, type: 'checkbox', value: role?.permissions?.includes(p) }))),
    field({ name: 'resources', label: 'Resource access', type: 'textarea', rows: 3, value: role ? Object.entries(role.resources || {}).map(([k, v]) => `${k}: ${v}`).join('\n') : '*: read',
      hint: 'One per line, resource: none, read or write; * is every resource.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, role ? 'Save role' : 'Create role')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = values(form);
    const body = { label: v.label, description: v.description, permissions: permissions.filter((p) => v[`perm:${p}`]), resources: {} };
    for (const line of String(v.resources).split('\n')) {
      const [k, lvl] = line.split(':').map((x) => (x || '').trim());
      if (k) body.resources[k] = lvl;
    }
    if (!role) body.name = v.name;
    await busy(form, async () => {
      try {
        if (role) await api('PATCH', `/v1/admin/roles/${encodeURIComponent(role.name)}`, body);
        else await api('POST', '/v1/admin/roles', body);
        clearErrors(form);
        announce(`Saved the role ${role ? role.name : body.name}.`, 'ok');
        await reload();
      } catch (err) {
        showError(form, err);
      }
    });
  });
  return form;
}

export async function render(el) {
  const membersOut = h('div', {});
  const rolesOut = h('div', {});
  const load = async () => {
    const [members, roles] = await Promise.all([api('GET', '/v1/admin/members'), api('GET', '/v1/admin/roles')]);
    const ms = data(members) || [];
    const rs = data(roles) || [];
    replace(membersOut, table(`Members (${ms.length})`, [
      { label: 'Member', cell: (m) => h('span', { 'data-member-id': m.id }, memberName(m)) },
      { label: 'Role', cell: (m) => roleControl(m, rs, load) },
      { label: 'State', cell: (m) => (m.active === false ? 'deactivated' : 'active') },
      { label: 'Since', cell: (m) => when(m.created_at) },
      { label: 'Actions', cell: (m) => activeControl(m, load) },
    ], ms));
    const permissions = [...new Set(['api.access', 'api.manage', ...rs.flatMap((r) => r.permissions || [])])].sort();
    replace(rolesOut, 
      table(`Roles (${rs.length})`, [
        { label: 'Role', cell: (r) => `${r.label || r.name} (${r.name})` },
        { label: 'Kind', cell: (r) => (r.builtin ? 'built-in' : 'workspace') },
        { label: 'Permissions', cell: (r) => (r.permissions || []).join(', ') || 'none' },
        { label: 'Resources', cell: (r) => Object.entries(r.resources || {}).map(([k, v]) => `${k}: ${v}`).join('; ') },
      ], rs),
      h('p', { class: 'hint' }, 'Built-in roles come from roles.yaml and do not change here. A role can only hold permissions your own role holds.'),
      rs.filter((r) => !r.builtin).map((r) => h('details', {}, h('summary', {}, `Edit ${r.name}`), roleForm(permissions, r, load))),
      roleForm(permissions, null, load));
  };
  await load();
  put(el, h('h2', {}, 'Members'), membersOut, h('h2', {}, 'Roles'), rolesOut);
}
