// The console: signs in with a one-time link, then routes #/page… to the pages below. Each page module
// exports render(main, ctx, params) and builds its content from the admin API.
import { data, session, setCsrfToken, whenSignedOut } from './api.js';
import { h, announce, errorBox, replace } from './ui.js';
import * as catalog from './catalog.js';
import * as fields from './fields.js';
import * as models from './models.js';
import * as members from './members.js';
import * as keys from './keys.js';
import * as usage from './usage.js';
import * as audit from './audit.js';
import * as webhooks from './webhooks.js';
import * as jobs from './jobs.js';

// pages in navigation order; admin pages need the permission api.manage.
const pages = [
  { path: 'catalog', title: 'Catalog', admin: true, module: catalog },
  { path: 'fields', title: 'Custom fields', admin: true, module: fields },
  { path: 'models', title: 'Data models', admin: true, module: models },
  { path: 'members', title: 'Members & roles', admin: true, module: members },
  { path: 'keys', title: 'Keys', admin: false, module: keys },
  { path: 'usage', title: 'Usage', admin: true, module: usage },
  { path: 'jobs', title: 'Jobs', admin: true, module: jobs },
  { path: 'audit', title: 'Audit', admin: true, module: audit },
  { path: 'webhooks', title: 'Webhooks', admin: true, module: webhooks },
];

const ctx = { me: null, admin: false, permissions: [], origin: window.location.origin };
const main = document.getElementById('main');

// visible are the pages the signed-in member may open.
function visible() {
  return pages.filter((p) => !p.admin || ctx.admin);
}

// parse splits "#/fields/new?resource=companies" into the page, the rest of the path and the query.
function parse(hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || '', rest: parts.slice(1), query: new URLSearchParams(qs || '') };
}

let rendering = 0;

async function route() {
  if (!ctx.me) return;
  const hash = window.location.hash;
  if (hash && !hash.startsWith('#/')) return; // the skip link and other in-page anchors
  const { page, rest, query } = parse(hash);
  const p = visible().find((x) => x.path === page) || visible()[0];
  if (!page || p.path !== page) {
    window.history.replaceState(null, '', `#/${p.path}`);
  }
  for (const a of document.querySelectorAll('#nav-list a')) {
    if (a.dataset.page === p.path) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const mine = ++rendering;
  document.title = `${p.title} — Workspace Records console`;
  replace(main, h('h1', {}, p.title), h('p', { class: 'loading' }, 'Loading…'));
  main.setAttribute('aria-busy', 'true');
  const section = h('div', { class: 'page', 'data-page': p.path });
  try {
    await p.module.render(section, ctx, { rest, query });
  } catch (err) {
    replace(section, errorBox(err));
  }
  if (mine !== rendering) return; // another navigation started meanwhile
  replace(main, h('h1', { id: 'page-title', tabIndex: -1 }, p.title), section);
  main.removeAttribute('aria-busy');
  main.dataset.ready = p.path;
}

function showNav() {
  const list = document.getElementById('nav-list');
  replace(list, ...visible().map((p) => h('li', {}, h('a', { href: `#/${p.path}`, 'data-page': p.path }, p.title))));
  document.getElementById('nav').hidden = false;
  const m = ctx.me.member || {};
  const w = ctx.me.workspace || {};
  document.getElementById('who').textContent = `${m.email || m.id || ''} · ${m.role || ''}${w.name ? ` · ${w.name}` : ''}`;
  document.getElementById('sign-out').hidden = false;
}

function signedOutView(message, kind = 'info') {
  ctx.me = null;
  setCsrfToken('');
  document.getElementById('nav').hidden = true;
  document.getElementById('sign-out').hidden = true;
  document.getElementById('who').textContent = '';
  document.title = 'Sign in — Workspace Records console';
  replace(main, 
    h('h1', {}, 'Sign in to the console'),
    h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : null }, h('p', { id: 'sign-in-message' }, message)),
    h('p', {}, 'An operator prints a one-time sign-in link for you with:'),
    h('pre', { class: 'code' }, h('code', {}, 'recordsctl console-link --member YOUR_MEMBER_ID')),
    h('p', {}, 'Open the link in this browser within its expiry (15 minutes by default). Each link signs in once.'),
  );
  main.dataset.ready = 'sign-in';
}

// signIn redeems the #sign-in=TOKEN of the address; the token leaves the address bar and the history
// before anything else happens.
async function signIn(token) {
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
  replace(main, h('h1', {}, 'Signing in…'));
  try {
    await session.signIn(token);
    return true;
  } catch (err) {
    const expired = err.status === 401 || err.status === 404 || err.status === 410 || err.status === 422;
    signedOutView(expired
      ? 'This sign-in link has expired or was already used. Ask for a new link: each one signs in once, within its expiry.'
      : `Signing in failed: ${err.message}`, 'error');
    return false;
  }
}

async function load() {
  const s = data(await session.current());
  setCsrfToken(s.csrf_token);
  ctx.me = s;
  const perms = s.permissions || (s.member && s.member.permissions) || [];
  ctx.permissions = perms;
  ctx.admin = perms.includes('api.manage');
}

async function boot() {
  document.getElementById('skip-link').addEventListener('click', (ev) => {
    ev.preventDefault();
    main.focus();
  });
  document.getElementById('sign-out').addEventListener('click', async () => {
    try {
      await session.signOut();
    } catch (err) {
      // Signed out either way: the page forgets the session.
    }
    window.history.replaceState(null, '', window.location.pathname);
    signedOutView('You are signed out.', 'ok');
    announce('Signed out.', 'ok');
  });
  whenSignedOut(() => signedOutView('Your session has ended (signed out, idle for 30 minutes or 12 hours old). Sign in again with a new link.', 'error'));
  window.addEventListener('hashchange', async () => {
    const m = window.location.hash.match(/^#sign-in=([0-9a-fA-F]+)$/);
    if (m) {
      if (await signIn(m[1])) await start();
      return;
    }
    await route();
    if (window.location.hash.startsWith('#/')) document.getElementById('page-title')?.focus();
  });

  const m = window.location.hash.match(/^#sign-in=([0-9a-fA-F]+)$/);
  if (m && !(await signIn(m[1]))) return;
  await start();
}

async function start() {
  try {
    await load();
  } catch (err) {
    if (err.status === 401) signedOutView('You are not signed in.');
    else signedOutView(`The console could not load the session: ${err.message}`, 'error');
    return;
  }
  showNav();
  await route();
}

boot();
