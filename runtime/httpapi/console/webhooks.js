// Webhooks: endpoints (/v1/admin/webhooks…: create with the signing secret shown once, enable or
// disable, rotate the secret, delete) and each endpoint's delivery log (…/deliveries, replay).
import { api, data, query } from './api.js';
import { h, table, field, formErrors, showError, clearErrors, values, busy, announce, button, when, confirmInline, copyButton, put, replace } from './ui.js';

function list(s) {
  return String(s || '').split(',').map((x) => x.trim()).filter(Boolean);
}

function secretNotice(secret, what, previousUntil) {
  const box = h('section', { class: 'notice secret', 'aria-labelledby': 'wh-secret-title', 'data-webhook-secret': true },
    h('h2', { id: 'wh-secret-title', tabIndex: -1 }, what),
    h('p', {}, h('strong', {}, 'Copy the signing secret now: it is shown only this once.'),
      previousUntil ? ` The previous secret also signs until ${when(previousUntil)}.` : ''),
    h('p', {}, h('label', { for: 'wh-secret' }, 'Signing secret')),
    h('input', { id: 'wh-secret', class: 'secret-value', type: 'text', readOnly: true, value: secret }),
    h('div', { class: 'actions' }, copyButton(secret, 'Copy the signing secret'), button('Hide it', () => box.remove())));
  return box;
}

function createForm(onMade) {
  const form = h('form', { class: 'form', noValidate: true, 'aria-labelledby': 'new-wh-title' },
    h('h2', { id: 'new-wh-title' }, 'New endpoint'),
    formErrors(),
    field({ name: 'url', label: 'URL', type: 'url', required: true, hint: 'http or https; internal addresses are refused unless the server allows them.' }),
    field({ name: 'description', label: 'Description' }),
    field({ name: 'event_types', label: 'Event types', hint: 'Comma-separated, e.g. companies.created, deals.updated; empty: every type.' }),
    field({ name: 'resources', label: 'Resources', hint: 'Comma-separated; empty: every resource.' }),
    field({ name: 'disabled', label: 'Create it disabled', type: 'checkbox' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Create endpoint')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = values(form);
    const body = { url: v.url };
    if (v.description) body.description = v.description;
    if (v.event_types) body.event_types = list(v.event_types);
    if (v.resources) body.resources = list(v.resources);
    if (v.disabled) body.enabled = false;
    await busy(form, async () => {
      try {
        const made = data(await api('POST', '/v1/admin/webhooks', body));
        clearErrors(form);
        form.reset();
        announce('Endpoint created. Copy its signing secret now.', 'ok');
        await onMade(made);
      } catch (err) {
        showError(form, err);
      }
    });
  });
  return form;
}

// endpointActions are the buttons of one endpoint. Another member's endpoint (mine false) offers what a
// manager may do with it (the API's allow-list: enable or disable, delete), not its deliveries, replay or
// secret, which are its owner's.
function endpointActions(w, reload, showSecret, mine) {
  const box = h('div', { class: 'row-actions' });
  const enabled = w.enabled !== false;
  put(box, 
    mine ? h('a', { class: 'button secondary', href: `#/webhooks/${encodeURIComponent(w.id)}`, 'aria-label': `Deliveries to ${w.url}` }, 'Deliveries') : h('span', { class: 'hint' }, 'Another member\'s'),
    button(enabled ? 'Disable' : 'Enable', async () => {
      try {
        await api('PATCH', `/v1/admin/webhooks/${encodeURIComponent(w.id)}`, { enabled: !enabled });
        announce(`${enabled ? 'Disabled' : 'Enabled'} ${w.url}.`, 'ok');
        await reload();
      } catch (err) {
        announce(err.message, 'error');
      }
    }, { attrs: { 'data-action': 'toggle', 'aria-label': `${enabled ? 'Disable' : 'Enable'} ${w.url}` } }),
    mine && button('Rotate secret', async () => {
      try {
        const r = data(await api('POST', `/v1/admin/webhooks/${encodeURIComponent(w.id)}/rotate-secret`, {}));
        await showSecret(r.secret, `New signing secret of ${w.url}`, r.previous_secret_until);
      } catch (err) {
        announce(err.message, 'error');
      }
    }, { attrs: { 'data-action': 'rotate', 'aria-label': `Rotate secret of ${w.url}` } }),
    button('Delete', () => confirmInline(box, `Delete ${w.url} with its delivery log?`, 'Delete', async () => {
      try {
        await api('DELETE', `/v1/admin/webhooks/${encodeURIComponent(w.id)}`);
        announce(`Deleted ${w.url}.`, 'ok');
        await reload();
      } catch (err) {
        announce(err.message, 'error');
      }
    }), { kind: 'danger', attrs: { 'aria-label': `Delete ${w.url}` } }));
  return box;
}

// lastAttempt says how the last attempt went: the answer's status, or why there was none.
function lastAttempt(attempts) {
  const a = attempts[attempts.length - 1];
  if (!a) return '—';
  const how = [a.status ? `HTTP ${a.status}` : '', a.outcome || '', a.error || ''].filter(Boolean).join(', ');
  return `${how}${a.latency_ms != null ? ` in ${a.latency_ms} ms` : ''}`;
}

async function deliveries(el, id) {
  const w = data(await api('GET', `/v1/admin/webhooks/${encodeURIComponent(id)}`));
  const body = h('tbody', {});
  const more = button('Load more', () => page(), { attrs: { hidden: true } });
  let cursor = null;
  const page = async (fresh = false) => {
    const answer = await api('GET', `/v1/admin/webhooks/${encodeURIComponent(id)}/deliveries${query({ cursor: fresh ? '' : cursor })}`);
    const rows = data(answer) || [];
    if (fresh) replace(body);
    put(body, ...rows.map((d) => h('tr', {},
      h('th', { scope: 'row' }, when(d.created_at)),
      h('td', {}, h('code', {}, d.event_id || '')),
      h('td', {}, String(d.sequence ?? '')),
      h('td', {}, d.state || ''),
      h('td', {}, String((d.attempts || []).length)),
      h('td', {}, lastAttempt(d.attempts || [])),
      h('td', {}, when(d.next_attempt_at)))));
    cursor = answer?.meta?.next_cursor || null;
    more.hidden = !cursor;
  };
  const replay = h('form', { class: 'filters', noValidate: true, 'aria-label': 'Replay events' },
    formErrors(),
    field({ name: 'after', label: 'Send again every event after sequence', type: 'number', value: '0', attrs: { min: 0 } }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button secondary' }, 'Replay')));
  replay.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await busy(replay, async () => {
      try {
        await api('POST', `/v1/admin/webhooks/${encodeURIComponent(id)}/replay`, { after: Number(values(replay).after || 0) });
        clearErrors(replay);
        announce('Events queued again.', 'ok');
        await page(true);
      } catch (err) {
        showError(replay, err);
      }
    });
  });
  await page(true);
  put(el, h('p', {}, h('a', { href: '#/webhooks' }, '← All endpoints')),
    h('h2', {}, `Deliveries to ${w.url}`),
    h('p', { class: 'meta' }, `${w.enabled === false ? 'disabled' : 'enabled'} · events: ${(w.event_types || []).join(', ') || 'every type'} · resources: ${(w.resources || []).join(', ') || 'every resource'}`),
    h('div', { class: 'scroll', tabIndex: 0, role: 'region', 'aria-label': 'Deliveries' },
      h('table', {}, h('caption', {}, 'Deliveries, newest first'),
        h('thead', {}, h('tr', {}, ['Created', 'Event id', 'Sequence', 'State', 'Attempts', 'Last attempt', 'Next attempt'].map((l) => h('th', { scope: 'col' }, l)))),
        body)),
    more, replay);
}

export async function render(el, ctx, { rest }) {
  if (rest[0]) {
    await deliveries(el, rest[0]);
    return;
  }
  const secretBox = h('div', {});
  const out = h('div', {});
  const showSecret = async (secret, what, previousUntil) => {
    replace(secretBox, secretNotice(secret, what, previousUntil));
    secretBox.querySelector('h2').focus();
  };
  const load = async () => {
    const eps = data(await api('GET', '/v1/admin/webhooks')) || [];
    replace(out, table(`Endpoints (${eps.length})`, [
      { label: 'URL', cell: (w) => h('span', { 'data-endpoint-url': w.url }, w.url) },
      { label: 'Description', cell: (w) => w.description || '' },
      { label: 'Events', cell: (w) => (w.event_types || []).join(', ') || 'every type' },
      { label: 'State', cell: (w) => (w.enabled === false ? `disabled${w.disabled_reason ? `: ${w.disabled_reason}` : ''}` : 'enabled') },
      { label: 'Resources', cell: (w) => (w.resources || []).join(', ') || 'every resource' },
      { label: 'Created', cell: (w) => when(w.created_at) },
      { label: 'Actions', cell: (w) => endpointActions(w, load, showSecret, w.member_id === ((ctx.me && ctx.me.member) || {}).id) },
    ], eps, { empty: 'none yet.' }));
  };
  await load();
  put(el, h('p', {}, 'Endpoints receive the workspace\'s events, signed the Standard Webhooks way.'), secretBox, out,
    createForm(async (made) => {
      await load();
      if (made && made.secret) await showSecret(made.secret, `Signing secret of ${made.url}`);
    }));
}
