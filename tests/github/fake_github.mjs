// A small stateful fake of the GitHub REST API routes the jit-github plugin
// uses, for the flows a stateless mock cannot show: installation tokens that
// expire or are revoked, runners created then listed by name then deleted,
// rate limits with Retry-After, and 5xx answers that heal.
//
// It checks every App JWT with `jose` (an implementation independent of the
// plugin's) against the App's public key: algorithm RS256, `iss` the App's id
// or client id, `iat` in the past and `exp` at most 10 minutes after it.
//
//   node fake_github.mjs SPEC.json   prints "listening PORT" once it serves
//
// SPEC: {"apps":[{"app_id":N,"client_id":"..","public_key_file":"..",
//        "installations":[{"id":N,"account":"acme"}]}],
//        "enterprise_tokens":{"TOKEN":"slug"}, "runner_groups":N,
//        "token_ttl_seconds":N}
// Control routes (no auth): GET /_fake/log, GET /_fake/jwt_checks,
// POST /_fake/fault {"match":"regex","status":N,"times":N,"headers":{},
//                   "delay_ms":N}: the next N matching requests get that
//                   (without "status": are held delay_ms, then served),
// POST /_fake/revoke_tokens, POST /_fake/token_ttl {"seconds":N},
// POST /_fake/busy {"name":"..","busy":true}.
// The Actions service of runner scale sets is fake_actions.mjs; its SPEC
// keys (poll_hold_ms, queue_url, session_gone, custom_labels,
// pickup_window_ms, ...) switch GitHub's behaviours, listed there.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { importSPKI, jwtVerify, decodeProtectedHeader } from 'jose';
import { createActions } from './fake_actions.mjs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const apps = [];
for (const a of spec.apps ?? []) {
  apps.push({ ...a, key: await importSPKI(readFileSync(a.public_key_file, 'utf8'), 'RS256') });
}
let tokenTtl = spec.token_ttl_seconds ?? 3600;
const tokens = new Map();  // token -> {app_id, installation, account, expires}
const log = [];            // every API request: method, path, who
const jwtChecks = [];      // every JWT seen: iss, alg, iat, exp, ok, reason
const faults = [];
const runners = new Map(); // account -> [{id,name,busy,labels,runner_group_id}]
let nextRunner = 1000;
const base = () => `http://127.0.0.1:${server.address().port}`;

function groupsFor(account) {
  const groups = [{ id: 1, name: 'Default', default: true }];
  for (let i = 0; i < (spec.runner_groups ?? 3); i++) groups.push({ id: 10 + i, name: `group-${i}`, default: false });
  groups.push({ id: 98, name: 'builders', default: false });
  groups.push({ id: 99, name: `builders-${account}`, default: false });
  return groups.map(g => ({ ...g, visibility: 'all', runners_url: 'x', inherited: false, allows_public_repositories: true }));
}

async function checkJwt(jwt) {
  const check = { ok: false };
  try {
    check.alg = decodeProtectedHeader(jwt).alg;
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
    Object.assign(check, { iss: claims.iss, iat: claims.iat, exp: claims.exp });
    const app = apps.find(a => String(a.app_id) === String(claims.iss) || a.client_id === claims.iss);
    if (!app) throw new Error(`no App with iss ${claims.iss}`);
    await jwtVerify(jwt, app.key, { algorithms: ['RS256'] });
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.iat !== 'number' || claims.iat > now + 5) throw new Error('iat is in the future');
    if (claims.iat < now - 120) throw new Error('iat is too far in the past');
    if (claims.exp - claims.iat > 600) throw new Error('exp is more than 10 minutes after iat');
    check.ok = true;
    check.app_id = app.app_id;
    jwtChecks.push(check);
    return app;
  } catch (e) {
    check.reason = String(e.message ?? e);
    jwtChecks.push(check);
    return null;
  }
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

function paginate(url, items) {
  const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30), 100);
  const page = Number(url.searchParams.get('page') ?? 1);
  return items.slice((page - 1) * perPage, page * perPage);
}

async function api(req, res, url, body) {
  const path = url.pathname.replace(/^\/api\/v3/, '');
  const auth = (req.headers.authorization ?? '').replace(/^Bearer /, '');
  const entry = { method: req.method, path: url.pathname + url.search };
  log.push(entry);
  for (const f of faults) {
    if (f.times > 0 && new RegExp(f.match).test(`${req.method} ${entry.path}`)) {
      f.times--;
      entry.fault = f.status ?? 'delayed';
      if (f.delay_ms) await new Promise(resolve => setTimeout(resolve, f.delay_ms));
      // Without a status the request is only held, then served. Test
      // control, not a GitHub behaviour: it keeps a call (a JIT mint) in
      // flight long enough for a test to see what waits on it.
      if (f.status === undefined) break;
      return send(res, f.status, { message: 'injected' }, f.headers ?? {});
    }
  }
  if (path === '/actions/runner-registration' && req.method === 'POST') return actions.register(req, res, body, base());
  if (actions.handles(url.pathname)) return actions.route(req, res, url, body, base());
  let m;
  // App-authenticated routes.
  if ((m = path.match(/^\/(?:orgs\/([^/]+)|repos\/([^/]+)\/[^/]+)\/installation$/)) && req.method === 'GET') {
    const app = await checkJwt(auth);
    if (!app) return send(res, 401, { message: 'A JSON web token could not be decoded' });
    entry.app_id = app.app_id;
    const inst = app.installations.find(i => i.account === (m[1] ?? m[2]));
    return inst ? send(res, 200, { id: inst.id, account: { login: inst.account } }) : send(res, 404, { message: 'Not Found' });
  }
  if ((m = path.match(/^\/app\/installations\/(\d+)\/access_tokens$/)) && req.method === 'POST') {
    const app = await checkJwt(auth);
    if (!app) return send(res, 401, { message: 'A JSON web token could not be decoded' });
    entry.app_id = app.app_id;
    const inst = app.installations.find(i => i.id === Number(m[1]));
    if (!inst) return send(res, 404, { message: 'Not Found' });
    // Longer than 40 characters: the plugin must assume no token length.
    const token = `ghs_${app.app_id}_${randomBytes(48).toString('base64url')}`;
    const expires = Date.now() + tokenTtl * 1000;
    tokens.set(token, { app_id: app.app_id, installation: inst.id, account: inst.account, expires });
    return send(res, 201, { token, expires_at: new Date(expires).toISOString().replace(/\.\d+Z$/, 'Z') });
  }
  // Installation-token (or enterprise token) routes.
  let who = tokens.get(auth);
  if (who && who.expires <= Date.now()) who = undefined;
  if (!who && spec.enterprise_tokens?.[auth]) who = { enterprise: spec.enterprise_tokens[auth] };
  if (!who) return send(res, 401, { message: 'Bad credentials' });
  entry.app_id = who.app_id ?? null;
  entry.installation = who.installation ?? null;
  m = path.match(/^\/(orgs|repos|enterprises)\/([^/]+(?:\/[^/]+)?)\/actions\/(.*)$/);
  if (!m) return send(res, 404, { message: 'Not Found' });
  const [, kind, target, rest] = m;
  const account = kind === 'repos' ? target.split('/')[0] : target;
  const allowed = kind === 'enterprises' ? who.enterprise === account : who.account === account;
  if (!allowed) return send(res, 404, { message: 'Not Found' });
  const list = runners.get(target) ?? [];
  runners.set(target, list);
  if (rest === 'runners/registration-token' && req.method === 'POST') return actions.registrationToken(res, account);
  if (rest === 'runner-groups' && req.method === 'GET' && kind !== 'repos') {
    const groups = groupsFor(account);
    return send(res, 200, { total_count: groups.length, runner_groups: paginate(url, groups) });
  }
  if ((m = rest.match(/^runner-groups\/(\d+)\/runners$/)) && req.method === 'GET' && kind !== 'repos') {
    // GitHub's "List self-hosted runners in a group": {total_count, runners}
    // with id, name, status (online|offline), busy, labels (REST docs,
    // actions/self-hosted-runner-groups). A scale set's JIT runners are
    // self-hosted runners of its runner group, so they are listed too
    // (assumed from the docs: to be checked on a real org, reference
    // scale-set-vs-github-clients.md §6).
    const gid = Number(m[1]);
    const found = [...list.filter(r => r.runner_group_id === gid), ...actions.groupRunners(account, gid)];
    return send(res, 200, { total_count: found.length, runners: paginate(url, found) });
  }
  if (rest === 'runners' && req.method === 'GET') {
    const name = url.searchParams.get('name');
    const found = list.filter(r => name === null || r.name === name);
    return send(res, 200, { total_count: found.length, runners: paginate(url, found) });
  }
  if (rest === 'runners/generate-jitconfig' && req.method === 'POST') {
    if (typeof body?.name !== 'string' || !Number.isInteger(body?.runner_group_id) || !Array.isArray(body?.labels) ||
        body.labels.length === 0) {
      return send(res, 422, { message: 'Invalid request: name, runner_group_id and labels are required' });
    }
    if (kind !== 'repos' && !groupsFor(account).some(g => g.id === body.runner_group_id)) {
      return send(res, 404, { message: 'Runner group not found' });
    }
    if (list.some(r => r.name === body.name)) return send(res, 409, { message: 'Already exists - A runner with the name already exists.' });
    const runner = { id: nextRunner++, name: body.name, os: 'linux', status: 'offline', busy: false, ephemeral: true,
                     runner_group_id: body.runner_group_id, labels: body.labels.map((n, i) => ({ id: i + 1, name: n, type: 'custom' })) };
    list.push(runner);
    const config = { app_id: who.app_id ?? null, enterprise: who.enterprise ?? null, target, runner: body.name,
                     labels: body.labels, work_folder: body.work_folder ?? '_work' };
    return send(res, 201, { runner, encoded_jit_config: Buffer.from(JSON.stringify(config)).toString('base64') });
  }
  if ((m = rest.match(/^runners\/(\d+)$/))) {
    const at = list.findIndex(r => r.id === Number(m[1]));
    if (at < 0) return send(res, 404, { message: 'Not Found' });
    if (req.method === 'GET') return send(res, 200, list[at]);
    if (req.method === 'DELETE') {
      if (list[at].busy) return send(res, 422, { message: 'Bad request - Runner is currently running a job' });
      list.splice(at, 1);
      return send(res, 204);
    }
  }
  return send(res, 404, { message: 'Not Found' });
}

function control(req, res, url, body) {
  if (url.pathname.startsWith('/_fake/actions/')) {
    if (actions.control(req, res, url, body) === 'parked' || res.headersSent) return;
  }
  switch (`${req.method} ${url.pathname}`) {
    case 'GET /_fake/log': return send(res, 200, log);
    case 'GET /_fake/jwt_checks': return send(res, 200, jwtChecks);
    case 'GET /_fake/runners': return send(res, 200, Object.fromEntries(runners));
    case 'POST /_fake/fault': faults.push(body); return send(res, 204);
    case 'POST /_fake/revoke_tokens': tokens.clear(); return send(res, 204);
    case 'POST /_fake/token_ttl': tokenTtl = body.seconds; return send(res, 204);
    case 'POST /_fake/busy':
      for (const list of runners.values()) for (const r of list) if (r.name === body.name) r.busy = body.busy;
      return send(res, 204);
  }
  return send(res, 404, { message: 'no such control route' });
}

const actions = createActions(spec, groupsFor, send);
const rateLimit = { remaining: 5000, reset: Math.floor(Date.now() / 1000) + 3600 };
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', c => chunks.push(c));
  req.on('end', async () => {
    const url = new URL(req.url, 'http://fake');
    let body = null;
    if (chunks.length) {
      try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch { return send(res, 400, { message: 'Problems parsing JSON' }); }
    }
    try {
      if (url.pathname.startsWith('/_fake/')) return control(req, res, url, body);
      if (url.pathname.startsWith('/api/v3/') || !actions.handles(url.pathname)) {
        // Every REST answer states the rate limit, as GitHub's do.
        rateLimit.remaining = Math.max(rateLimit.remaining - 1, 0);
        res.setHeader('x-ratelimit-limit', '5000');
        res.setHeader('x-ratelimit-remaining', String(rateLimit.remaining));
        res.setHeader('x-ratelimit-reset', String(rateLimit.reset));
      }
      await api(req, res, url, body);
    } catch (e) {
      send(res, 500, { message: String(e) });
    }
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
