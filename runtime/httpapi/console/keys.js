// Keys: my own keys (GET/POST /v1/me/keys, roll, revoke) and, for admins, every member's keys
// (GET /v1/admin/keys, revoke). A secret is shown once, when a key is made or rolled.
import { api, data, query } from './api.js';
import { h, table, field, formErrors, showError, clearErrors, values, busy, announce, button, when, confirmInline, copyButton, uid, errorBox, put, replace } from './ui.js';

function state(k) {
  if (k.revoked_at) return `revoked ${when(k.revoked_at)}`;
  if (k.state === 'expired' || (k.expires_at && new Date(k.expires_at) < new Date())) return `expired ${when(k.expires_at)}`;
  return k.rolled_to ? `rolled; valid until ${when(k.expires_at)}` : 'active';
}

// made reads the answer of a create or a roll: {key, secret} (the key never carries its secret again).
function made(answer) {
  const d = data(answer) || {};
  return { key: d.key && typeof d.key === 'object' ? d.key : d, secret: d.secret };
}

function restrictions(k) {
  const parts = [];
  parts.push(Array.isArray(k.resources) && k.resources.length ? `resources: ${k.resources.join(', ')}` : 'all resources');
  if (Array.isArray(k.allow_ips) && k.allow_ips.length) parts.push(`from ${k.allow_ips.join(', ')}`);
  return parts.join('; ');
}

function lastUse(k) {
  return k.last_used_at ? `${when(k.last_used_at)}${k.last_used_ip ? ` from ${k.last_used_ip}` : ''}` : 'never';
}

// secretPanel shows a new secret once, with a copy button and a curl line that uses it.
function secretPanel({ key: k, secret }, origin, what) {
  const curl = `curl -H "Authorization: Bearer ${secret}" ${origin}/v1/me`;
  const panel = h('section', { class: 'notice secret', 'aria-labelledby': 'secret-title', 'data-secret-for': k.id },
    h('h2', { id: 'secret-title', tabIndex: -1 }, what),
    h('p', {}, h('strong', {}, 'Copy the secret now: it is shown only this once.'), ' The server keeps only its hash.'),
    h('p', {}, h('label', { for: 'new-secret' }, 'Secret')),
    h('input', { id: 'new-secret', class: 'secret-value', type: 'text', readOnly: true, value: secret, spellcheck: false, autocomplete: 'off' }),
    h('div', { class: 'actions' }, copyButton(secret, 'Copy the secret')),
    h('p', {}, 'Try it:'),
    h('pre', { class: 'code', tabIndex: 0, role: 'region', 'aria-label': 'curl example' }, h('code', { id: 'curl-example' }, curl)),
    h('div', { class: 'actions' }, copyButton(curl, 'Copy the curl line'),
      button('I have stored it: hide the secret', () => { panel.remove(); announce('The secret is hidden; it cannot be shown again.'); })));
  return panel;
}

function createForm(ctx, onMade) {
  const accessOptions = [['read', 'read: records, read only'], ['write', 'write: records, read and write']];
  if (ctx.admin) accessOptions.push(['admin', 'admin: the admin API only']);
  const form = h('form', { class: 'form', noValidate: true, 'aria-labelledby': 'new-key-title' },
    h('h2', { id: 'new-key-title' }, 'New key'),
    formErrors(),
    field({ name: 'name', label: 'Name', hint: 'What the key is for, e.g. "nightly sync".' }),
    field({ name: 'access', label: 'Access', type: 'select', options: accessOptions, value: 'read', required: true }),
    field({ name: 'resources', label: 'Resources', hint: 'Comma-separated resource names; empty: every resource your role may use.' }),
    field({ name: 'allow_ips', label: 'Allowed addresses', hint: 'Comma-separated addresses or CIDR ranges; empty: any.' }),
    field({ name: 'expires_in', label: 'Expires in', type: 'select', options: [['30d', '30 days'], ['90d', '90 days'], ['180d', '180 days'], ['365d', '1 year']], value: '90d' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Create key')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = values(form);
    const body = { access: v.access, expires_in: v.expires_in };
    if (v.name) body.name = v.name;
    const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
    if (v.resources) body.resources = list(v.resources);
    if (v.allow_ips) body.allow_ips = list(v.allow_ips);
    await busy(form, async () => {
      try {
        const k = made(await api('POST', '/v1/me/keys', body));
        clearErrors(form);
        form.reset();
        announce('Key created. Copy its secret now.', 'ok');
        await onMade(k, 'Your new key');
      } catch (err) {
        if (err.code === 'key_assurance_stale') {
          err.message = 'Creating or rolling a key needs a sign-in within the last 15 minutes: sign out and use a new sign-in link.';
        }
        showError(form, err);
      }
    });
  });
  return form;
}

function rollControl(k, onMade) {
  const box = h('div', { class: 'row-actions' });
  const open = () => {
    const id = uid('overlap');
    const select = h('select', { id },
      [['0s', 'none: the old key stops now'], ['1h', '1 hour'], ['24h', '24 hours'], ['72h', '3 days'], ['168h', '7 days']]
        .map(([v, l]) => h('option', { value: v, selected: v === '24h' }, l)));
    const keep = [...box.childNodes];
    const go = button('Roll now', async () => {
      go.disabled = true;
      try {
        const rolled = made(await api('POST', `/v1/me/keys/${encodeURIComponent(k.id)}/roll`, { overlap: select.value }));
        announce('Key rolled. Copy the new secret now.', 'ok');
        await onMade(rolled, `The new key replacing ${k.hint || k.id}`);
      } catch (err) {
        announce(err.code === 'key_assurance_stale' ? 'Rolling a key needs a sign-in within the last 15 minutes: sign in again.' : err.message, 'error');
        go.disabled = false;
      }
    }, { kind: 'primary' });
    replace(box, h('label', { for: id }, 'Old key stays valid for'), select, go, button('Cancel', () => replace(box, ...keep)));
    select.focus();
  };
  put(box, button(`Roll ${k.hint || ''}`.trim(), open, { attrs: { 'data-action': 'roll' } }));
  return box;
}

function revokeControl(k, path, reload) {
  const box = h('div', { class: 'row-actions' });
  put(box, button(`Revoke ${k.hint || ''}`.trim(), () => confirmInline(box, `Revoke ${k.hint || k.id}? Requests with it fail at once.`, 'Revoke', async () => {
    try {
      await api('POST', path);
      announce(`Revoked ${k.hint || k.id}.`, 'ok');
      await reload();
    } catch (err) {
      announce(err.message, 'error');
    }
  }), { kind: 'danger', attrs: { 'data-action': 'revoke' } }));
  return box;
}

export async function render(el, ctx) {
  const secretBox = h('div', { id: 'secret-box' });
  const mineOut = h('div', {});
  const allOut = h('div', {});
  const allFilter = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter every member\'s keys' },
    field({ name: 'member', label: 'Member id', hint: 'Empty: every member.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Show')));
  const onMade = async (k, what) => {
    replace(secretBox, secretPanel(k, ctx.origin, what));
    await load();
    secretBox.querySelector('h2').focus();
  };
  const load = async () => {
    const mine = data(await api('GET', '/v1/me/keys')) || [];
    replace(mineOut, table(`My keys (${mine.length})`, [
      { label: 'Key', cell: (k) => h('span', { 'data-key-id': k.id }, k.name ? `${k.name} ` : '', h('code', {}, k.hint || k.id)) },
      { label: 'Access', cell: (k) => k.access },
      { label: 'Restrictions', cell: (k) => restrictions(k) },
      { label: 'Expires', cell: (k) => when(k.expires_at) },
      { label: 'Last used', cell: (k) => lastUse(k) },
      { label: 'State', cell: (k) => state(k) },
      { label: 'Actions', cell: (k) => (k.revoked_at || k.state === 'expired' ? '—' : h('div', { class: 'row-actions' }, rollControl(k, onMade), revokeControl(k, `/v1/me/keys/${encodeURIComponent(k.id)}/revoke`, load))) },
    ], mine, { empty: 'none yet.' }));
    if (ctx.admin) {
      const m = values(allFilter).member;
      let all;
      try {
        all = data(await api('GET', `/v1/admin/keys${query({ member: m })}`)) || [];
      } catch (err) {
        replace(allOut, errorBox(err));
        return;
      }
      replace(allOut, table(`Every member's keys (${all.length})`, [
        { label: 'Key', cell: (k) => h('code', { 'data-admin-key-id': k.id }, k.hint || k.id) },
        { label: 'Member', cell: (k) => (k.member && (k.member.email || k.member.id)) || k.member_id || '' },
        { label: 'Access', cell: (k) => k.access },
        { label: 'Restrictions', cell: (k) => restrictions(k) },
        { label: 'Expires', cell: (k) => when(k.expires_at) },
        { label: 'Last used', cell: (k) => lastUse(k) },
        { label: 'State', cell: (k) => state(k) },
        { label: 'Actions', cell: (k) => (k.revoked_at || k.state === 'expired' ? '—' : revokeControl(k, `/v1/admin/keys/${encodeURIComponent(k.id)}/revoke`, load)) },
      ], all, { empty: 'none.' }));
    }
  };
  allFilter.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await load();
    announce('Keys updated.');
  });
  await load();
  put(el, 
    h('p', {}, 'Keys call the API as you, with your role. Creating or rolling one needs a sign-in within the last 15 minutes.'),
    secretBox, mineOut, createForm(ctx, onMade),
    ctx.admin ? h('section', { 'aria-labelledby': 'all-keys-title' }, h('h2', { id: 'all-keys-title' }, 'Every member\'s keys'), allFilter, allOut) : null);
}
