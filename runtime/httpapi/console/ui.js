// DOM helpers: elements are built with text nodes only (never HTML strings), forms carry a label for
// every input and show the server's field errors beside the input they name.

// put appends children to el as h does: nodes, strings (text) and arrays of either; null and false
// are skipped (the DOM's own append would write them as text).
export function put(el, ...children) {
  append(el, children);
  return el;
}

// replace is put after emptying el.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// h builds an element: attrs set properties (on…: listeners, class, for, aria-*/data-*: attributes);
// children are nodes, strings (text) or arrays of either; null and false are skipped.
export function h(tag, attrs = {}, ...children) {
  const el = tag === 'svg' || svgTags.has(tag) ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'for') el.htmlFor = v;
    else if (k === 'text') el.textContent = v;
    else if (el instanceof SVGElement || k.startsWith('aria-') || k.startsWith('data-') || k === 'role') el.setAttribute(k, v === true ? '' : String(v));
    else el[k] = v;
  }
  append(el, children);
  return el;
}

const svgTags = new Set(['g', 'rect', 'line', 'text', 'title', 'desc', 'path', 'polyline', 'circle']);

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

let ids = 0;
// uid returns an id unique in the page.
export function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

// announce says msg in the page's live region (and shows it).
export function announce(msg, kind = 'info') {
  const s = document.getElementById('status');
  s.textContent = '';
  s.className = `status ${kind}`;
  // A new text node after clearing makes screen readers read it again when it repeats.
  window.setTimeout(() => { s.textContent = msg; }, 30);
  window.clearTimeout(announce.timer);
  announce.timer = window.setTimeout(() => { s.textContent = ''; }, 10000);
}

// when formats an RFC 3339 time for people ("—" for none).
export function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toISOString().replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
}

// yesNo writes a boolean.
export function yesNo(b) {
  return b ? 'yes' : 'no';
}

// table builds a captioned table in a focusable scroll region (it scrolls sideways on a phone).
// columns: [{label, cell: (row) => node|string}].
export function table(caption, columns, rows, { empty = 'Nothing yet.' } = {}) {
  if (!rows.length) return h('p', { class: 'empty' }, `${caption}: ${empty}`);
  const t = h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c.label)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, columns.map((c, i) => (i === 0 ? h('th', { scope: 'row' }, c.cell(r)) : h('td', {}, c.cell(r))))))));
  return h('div', { class: 'scroll', tabIndex: 0, role: 'region', 'aria-label': caption }, t);
}

// field builds a labelled input with a hint and a place for its error. spec: {name, label, type
// ('text', 'select', 'textarea', 'checkbox', …), options: [[value, label]], value, hint, required, attrs}.
export function field(spec) {
  const id = uid(`f-${spec.name}`);
  const errId = `${id}-error`;
  const hintId = spec.hint ? `${id}-hint` : null;
  const described = [hintId, errId].filter(Boolean).join(' ');
  const common = { id, name: spec.name, 'aria-describedby': described, required: !!spec.required, ...(spec.attrs || {}) };
  let input;
  if (spec.type === 'select') {
    input = h('select', common, (spec.options || []).map(([v, l]) => h('option', { value: v, defaultSelected: String(v) === String(spec.value ?? ''), selected: String(v) === String(spec.value ?? '') }, l)));
  } else if (spec.type === 'textarea') {
    input = h('textarea', { ...common, rows: spec.rows || 3, value: spec.value ?? '' });
  } else if (spec.type === 'checkbox') {
    input = h('input', { ...common, type: 'checkbox', checked: !!spec.value });
  } else {
    input = h('input', { ...common, type: spec.type || 'text', value: spec.value ?? '' });
  }
  const label = h('label', { for: id }, spec.label, spec.required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null);
  const parts = spec.type === 'checkbox'
    ? [h('div', { class: 'check' }, input, label)]
    : [label, input];
  return h('div', { class: 'field', 'data-field': spec.name },
    parts,
    hintId ? h('p', { class: 'hint', id: hintId }, spec.hint) : null,
    h('p', { class: 'field-error', id: errId }));
}

// clearErrors empties a form's field errors and its summary.
export function clearErrors(form) {
  for (const el of form.querySelectorAll('.field-error')) el.textContent = '';
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  const summary = form.querySelector('.form-errors');
  if (summary) {
    summary.textContent = '';
    summary.hidden = true;
  }
}

// fieldFor finds the form's field a server error names: its name, or the first segment of a path
// (options[2], fields.rating.type, /key).
function fieldFor(form, name) {
  const candidates = [name, name.replace(/^\//, '').replace(/\//g, '.'), name.split(/[.[/]/).filter(Boolean)[0]];
  for (const c of candidates) {
    if (!c) continue;
    const box = [...form.querySelectorAll('.field')].find((f) => f.dataset.field === c);
    if (box) return box;
  }
  return null;
}

// showError puts an ApiError on a form: each details.errors item beside the field it names, the rest
// (and the message) in the form's summary; the first invalid input takes the focus.
export function showError(form, err) {
  clearErrors(form);
  const summary = form.querySelector('.form-errors');
  const loose = [];
  let first = null;
  for (const fe of err.fieldErrors || []) {
    const box = fieldFor(form, String(fe.field || ''));
    if (!box) {
      loose.push(`${fe.field}: ${fe.message}`);
      continue;
    }
    const out = box.querySelector('.field-error');
    out.textContent = out.textContent ? `${out.textContent}; ${fe.message}` : fe.message;
    const input = box.querySelector('input, select, textarea');
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      first = first || input;
    }
  }
  if (summary) {
    summary.hidden = false;
    put(summary, h('p', {}, err.message), loose.length ? h('ul', {}, loose.map((l) => h('li', {}, l))) : null);
  }
  announce(err.message, 'error');
  if (first) first.focus();
  else if (summary) summary.focus();
}

// formErrors is a form's summary of errors (hidden while there are none).
export function formErrors() {
  return h('div', { class: 'form-errors', role: 'alert', tabIndex: -1, hidden: true });
}

// values reads a form's named inputs: checkboxes as booleans, the rest as trimmed strings.
export function values(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    out[el.name] = el.type === 'checkbox' ? el.checked : el.value.trim();
  }
  return out;
}

// button is a real <button type="button">.
export function button(label, onclick, { kind = 'secondary', attrs = {} } = {}) {
  return h('button', { type: 'button', class: `button ${kind}`, onclick, ...attrs }, label);
}

// busy disables a form's submit button while fn runs.
export async function busy(form, fn) {
  const submit = form.querySelector('[type=submit]');
  if (submit) submit.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } finally {
    if (submit) submit.disabled = false;
    form.removeAttribute('aria-busy');
  }
}

// copyButton copies text to the clipboard (a secret, a curl line) and says so.
export function copyButton(text, label) {
  return button(label, async () => {
    try {
      await navigator.clipboard.writeText(text);
      announce('Copied to the clipboard.', 'ok');
    } catch (err) {
      announce('The browser did not allow copying: select the text and copy it.', 'error');
    }
  });
}

// errorBox shows an error that is not a form's (a failed load).
export function errorBox(err) {
  return h('div', { class: 'notice error', role: 'alert' }, h('p', {}, err.message),
    err.requestId ? h('p', { class: 'hint' }, `Request id ${err.requestId}`) : null);
}

// confirmInline turns a row's action into "Really? [confirm] [cancel]" without a modal dialog.
export function confirmInline(container, question, confirmLabel, onConfirm) {
  const keep = [...container.childNodes];
  const cancel = () => {
    container.replaceChildren(...keep);
    keep.find((n) => n.focus)?.focus();
  };
  const yes = button(confirmLabel, async () => {
    yes.disabled = true;
    try {
      await onConfirm();
    } finally {
      yes.disabled = false;
    }
  }, { kind: 'danger' });
  replace(container, h('span', { class: 'confirm-q' }, question), yes, button('Cancel', cancel));
  yes.focus();
}
