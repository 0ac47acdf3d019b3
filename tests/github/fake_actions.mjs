// A small stateful fake of GitHub's Actions service for runner scale sets
// (no public spec exists; the shapes are those of actions/scaleset and
// ARC's listener, docs/jit-github.md): runner registration, runner groups,
// scale sets, message sessions with the 409 conflict, the message queue
// (200 / 202 / redelivery until acknowledged), acquisition, JIT configs and
// agents. It also plays the runner's side: a runner presents its JIT config
// to take one job assigned to its scale set, then reports it finished.
//
// Like GitHub.com, jobs arrive as JobAssigned with runnerRequestId 0 unless
// a queue call asks for request ids (then JobAvailable, acquired first, as
// on GHES). A runner takes whichever assigned job is next, not the one its
// launch was for.
//
// Routes (mounted by fake_github.mjs):
//   POST /actions/runner-registration                 RemoteAuth <registration token>
//   /actions-service/_apis/...                        Bearer <admin token> (acquirejobs: the queue token)
//   /actions-queue/<session>[/<message>]              Bearer <queue token>
//   POST /actions-runner/take {jit, wait_ms}   parked until a job is assigned
//   POST /actions-runner/finish {jit, result}  parked while the job is held   (the fake runner)
// Control: POST /_fake/actions/queue {scale_set, count, repository, available, hold},
//          POST /_fake/actions/release (held jobs finish),
//          GET /_fake/actions/jobs, GET /_fake/actions/state,
//          POST /_fake/actions/expire_sessions, POST /_fake/actions/expire_queue_tokens,
//          POST /_fake/actions/faults {status, count, retry_after}: the next `count`
//            requests of the control plane (service and queue routes, not the
//            runner's) are answered `status` (a 5xx, or 429 with Retry-After)
import { randomBytes, randomUUID } from 'node:crypto';

export function createActions(spec, groupsFor, send) {
  const adminTtl = spec.admin_token_ttl_seconds ?? 3600;
  const pollHoldMs = spec.poll_hold_ms ?? 1000;
  const sessionIdleMs = (spec.session_idle_seconds ?? 60) * 1000;
  const registrations = new Map(); // registration token -> account
  const admins = new Map();        // admin token -> {account, expires}
  const scaleSets = new Map();     // id -> {id, name, runnerGroupId, labels, account, session, messages, nextMessage, waiters, maxCapacity}
  const sessions = new Map();      // session id -> {scaleSet, owner, token, tokenExpires, lastSeen}
  const agents = new Map();        // name -> {id, name, scaleSetId, busy, job}
  const jobs = [];                 // {jobId, requestId, scaleSetId, state, runnerName, takenBy: [], result, repository}
  const runnerWaiters = [];        // takes parked until a job is assigned
  const faults = { status: 0, left: 0, retryAfter: 0, served: 0 };
  let nextId = 5000;
  let nextJob = 1;

  const b64url = o => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = claims => `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}.${randomBytes(16).toString('base64url')}`;
  const iso = ms => new Date(ms).toISOString();

  function statistics(ss) {
    const mine = jobs.filter(j => j.scaleSetId === ss.id);
    const runners = [...agents.values()].filter(a => a.scaleSetId === ss.id);
    return {
      totalAvailableJobs: mine.filter(j => j.state === 'available').length,
      totalAcquiredJobs: mine.filter(j => j.state === 'acquired').length,
      totalAssignedJobs: mine.filter(j => j.state === 'assigned' || j.state === 'running').length,
      totalRunningJobs: mine.filter(j => j.state === 'running').length,
      totalRegisteredRunners: runners.length,
      totalBusyRunners: runners.filter(r => r.busy).length,
      totalIdleRunners: runners.filter(r => !r.busy).length,
    };
  }

  function entry(type, job, extra = {}) {
    return { messageType: type, runnerRequestId: job.requestId, jobId: job.jobId, workflowRunId: job.runId,
             ownerName: job.owner, repositoryName: job.repository, jobWorkflowRef: job.workflowRef,
             jobDisplayName: 'build', eventName: 'push', requestLabels: job.labels, queueTime: iso(job.queued),
             scaleSetAssignTime: job.assigned ? iso(job.assigned) : undefined, ...extra };
  }

  function publish(ss, entries) {
    ss.messages.push({ id: ss.nextMessage++, entries });
    for (const wake of ss.waiters.splice(0)) wake();
    for (const wake of runnerWaiters.splice(0)) wake();  // an assignment may be among them
  }

  function sessionOf(req, sid) {
    const s = sessions.get(sid);
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!s) return { status: 404 };
    if (s.token !== token) return { status: 401 };
    if (s.tokenExpires <= Date.now()) return { status: 401 };
    s.lastSeen = Date.now();
    return { s };
  }

  function liveSession(ss) {
    const s = ss.session ? sessions.get(ss.session) : undefined;
    if (s && Date.now() - s.lastSeen < sessionIdleMs) return s;
    if (s) sessions.delete(ss.session);  // abandoned: expired, as GitHub's do after a while
    ss.session = null;
    return undefined;
  }

  function newSession(ss, owner) {
    const s = { id: randomUUID(), scaleSet: ss.id, owner, token: randomBytes(24).toString('base64url'),
                tokenExpires: Date.now() + (spec.queue_token_ttl_seconds ?? 3600) * 1000, lastSeen: Date.now() };
    sessions.set(s.id, s);
    ss.session = s.id;
    return s;
  }

  function sessionJson(base, ss, s) {
    return { sessionId: s.id, ownerName: s.owner, runnerScaleSet: scaleSetJson(ss),
             messageQueueUrl: `${base}/actions-queue/${s.id}`, messageQueueAccessToken: s.token, statistics: statistics(ss) };
  }

  function scaleSetJson(ss) {
    return { id: ss.id, name: ss.name, runnerGroupId: ss.runnerGroupId, labels: ss.labels.map(n => ({ name: n, type: 'System' })),
             RunnerSetting: { disableUpdate: true } };
  }

  // The runner's JIT config, as the fake runner reads it back.
  function decodeJit(text) {
    try { return JSON.parse(Buffer.from(String(text), 'base64').toString()); } catch { return null; }
  }

  async function service(req, res, url, body, base) {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const path = url.pathname.replace(/^\/actions-service\/_apis\//, '');
    if (url.searchParams.get('api-version') !== '6.0-preview') return send(res, 400, { message: 'api-version is required' });
    let m;
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)\/acquirejobs$/)) && req.method === 'POST') {
      const ss = scaleSets.get(Number(m[1]));
      const s = ss && liveSession(ss);
      if (!s || s.token !== token || s.tokenExpires <= Date.now()) return send(res, 401, { message: 'queue token refused' });
      if (!Array.isArray(body)) return send(res, 400, { message: 'the body is an array of request ids' });
      const granted = [];
      for (const id of body) {
        const job = jobs.find(j => j.scaleSetId === ss.id && j.requestId === id && j.state === 'available');
        if (!job) continue;
        job.state = 'assigned';
        job.assigned = Date.now();
        granted.push(id);
        publish(ss, [entry('JobAssigned', job)]);
      }
      return send(res, 200, { count: granted.length, value: granted });
    }
    const admin = admins.get(token);
    if (!admin || admin.expires <= Date.now()) return send(res, 401, { message: 'admin token refused' });
    const account = admin.account;
    if (path === 'runtime/runnergroups/' && req.method === 'GET') {
      const name = url.searchParams.get('groupName');
      const found = groupsFor(account).filter(g => g.name === name)
        .map(g => ({ id: g.id, name: g.name, size: 0, isDefaultGroup: g.default }));
      return send(res, 200, { count: found.length, value: found });
    }
    if (path === 'runtime/runnerscalesets' && req.method === 'GET') {
      const gid = Number(url.searchParams.get('runnerGroupId'));
      const name = url.searchParams.get('name');
      const found = [...scaleSets.values()].filter(s => s.account === account && s.runnerGroupId === gid && s.name === name);
      return send(res, 200, { count: found.length, value: found.map(scaleSetJson) });
    }
    if (path === 'runtime/runnerscalesets' && req.method === 'POST') {
      if (typeof body?.name !== 'string' || !Number.isInteger(body?.runnerGroupId)) return send(res, 400, { message: 'name and runnerGroupId are required' });
      if (!groupsFor(account).some(g => g.id === body.runnerGroupId)) return send(res, 404, { message: 'runner group not found' });
      const ss = { id: nextId++, name: body.name, runnerGroupId: body.runnerGroupId, labels: (body.labels ?? []).map(l => l.name),
                   account, session: null, messages: [], nextMessage: 1, waiters: [], maxCapacity: null };
      scaleSets.set(ss.id, ss);
      return send(res, 200, scaleSetJson(ss));
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)$/))) {
      const ss = scaleSets.get(Number(m[1]));
      if (!ss || ss.account !== account) return send(res, 404, { message: 'scale set not found' });
      if (req.method === 'PATCH') ss.labels = (body?.labels ?? []).map(l => l.name);
      return send(res, 200, scaleSetJson(ss));
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)\/sessions(?:\/([^/]+))?$/))) {
      const ss = scaleSets.get(Number(m[1]));
      if (!ss || ss.account !== account) return send(res, 404, { message: 'scale set not found' });
      if (req.method === 'POST' && !m[2]) {
        const held = liveSession(ss);
        if (held) {
          return send(res, 409, { typeName: 'RunnerScaleSetSessionConflictException',
                                  message: `The runner scale set ${ss.name} already has an active session for owner ${held.owner}.` });
        }
        return send(res, 200, sessionJson(base, ss, newSession(ss, body?.ownerName ?? '')));
      }
      const s = sessions.get(m[2]);
      if (!s || s.scaleSet !== ss.id) return send(res, 404, { message: 'session not found' });
      if (req.method === 'PATCH') {
        s.token = randomBytes(24).toString('base64url');
        s.tokenExpires = Date.now() + (spec.queue_token_ttl_seconds ?? 3600) * 1000;
        s.lastSeen = Date.now();
        return send(res, 200, sessionJson(base, ss, s));
      }
      if (req.method === 'DELETE') {
        sessions.delete(s.id);
        ss.session = null;
        return send(res, 204);
      }
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)\/generatejitconfig$/)) && req.method === 'POST') {
      const ss = scaleSets.get(Number(m[1]));
      if (!ss || ss.account !== account) return send(res, 404, { message: 'scale set not found' });
      if (typeof body?.name !== 'string' || body.name === '') return send(res, 400, { message: 'name is required' });
      if (agents.has(body.name)) return send(res, 409, { typeName: 'AgentExistsException', message: `Agent ${body.name} already exists` });
      const agent = { id: nextId++, name: body.name, scaleSetId: ss.id, busy: false, job: null };
      agents.set(agent.name, agent);
      const config = { scale_set_id: ss.id, runner_name: agent.name, agent_id: agent.id, work_folder: body.workFolder ?? '', service: base };
      return send(res, 200, { runner: { id: agent.id, name: agent.name, runnerScaleSetId: ss.id },
                              encodedJITConfig: Buffer.from(JSON.stringify(config)).toString('base64') });
    }
    if (path === 'distributedtask/pools/0/agents' && req.method === 'GET') {
      const a = agents.get(url.searchParams.get('agentName'));
      return send(res, 200, { count: a ? 1 : 0, value: a ? [{ id: a.id, name: a.name, busy: a.busy }] : [] });
    }
    if ((m = path.match(/^distributedtask\/pools\/0\/agents\/(\d+)$/)) && req.method === 'DELETE') {
      const a = [...agents.values()].find(x => x.id === Number(m[1]));
      if (!a) return send(res, 404, { typeName: 'AgentNotFoundException', message: 'agent not found' });
      if (a.busy) return send(res, 400, { typeName: 'JobStillRunningException', message: 'the agent is running a job' });
      agents.delete(a.name);
      return send(res, 204);
    }
    return send(res, 404, { message: 'Not Found' });
  }

  async function queue(req, res, url) {
    const [, sid, msg] = url.pathname.match(/^\/actions-queue\/([^/]+)(?:\/(\d+))?$/) ?? [];
    const { s, status } = sessionOf(req, sid);
    if (!s) return send(res, status, { message: status === 401 ? 'queue token expired' : 'session not found' });
    const ss = scaleSets.get(s.scaleSet);
    if (req.method === 'DELETE' && msg) {
      ss.messages = ss.messages.filter(x => x.id !== Number(msg));
      return send(res, 204);
    }
    if (req.method !== 'GET' || msg) return send(res, 404, { message: 'Not Found' });
    const cap = req.headers['x-scalesetmaxcapacity'];
    if (cap === undefined || !/^\d+$/.test(cap)) return send(res, 400, { message: 'X-ScaleSetMaxCapacity is required' });
    ss.maxCapacity = Number(cap);
    const after = Number(url.searchParams.get('lastMessageId') ?? 0);
    const deadline = Date.now() + pollHoldMs;
    for (;;) {
      // Unacknowledged messages come back, in order, after lastMessageId (all of them from 0).
      const next = ss.messages.find(x => x.id > after) ?? (after > 0 ? undefined : ss.messages[0]);
      if (sessions.get(sid) !== s) return send(res, 404, { message: 'session not found' });
      if (next) {
        s.lastSeen = Date.now();
        return send(res, 200, { messageId: next.id, messageType: 'RunnerScaleSetJobMessages',
                                body: next.raw ?? JSON.stringify(next.entries), statistics: statistics(ss) });
      }
      const left = deadline - Date.now();
      if (left <= 0) { s.lastSeen = Date.now(); return send(res, 202); }
      await new Promise(resolve => { const t = setTimeout(resolve, left); ss.waiters.push(() => { clearTimeout(t); resolve(); }); });
    }
  }

  async function runner(req, res, url, body) {
    const config = decodeJit(body?.jit);
    const agent = config && agents.get(config.runner_name);
    if (!agent || agent.id !== config.agent_id) return send(res, 401, { message: 'the JIT config is not a registered runner' });
    const ss = scaleSets.get(agent.scaleSetId);
    if (url.pathname === '/actions-runner/take') {
      // Parked until a job is assigned to the scale set, or wait_ms passes.
      if (agent.job) return send(res, 409, { message: 'this runner already took a job: JIT runners run one' });
      const deadline = Date.now() + (body?.wait_ms ?? 120000);
      for (;;) {
        const job = jobs.find(j => j.scaleSetId === ss.id && j.state === 'assigned');
        if (job) {
          job.state = 'running';
          job.runnerName = agent.name;
          job.takenBy.push(agent.name);
          agent.busy = true;
          agent.job = job.jobId;
          publish(ss, [entry('JobStarted', job, { runnerId: agent.id, runnerName: agent.name })]);
          return send(res, 200, { job_id: job.jobId, repository: job.repository });
        }
        const left = deadline - Date.now();
        if (left <= 0) return send(res, 204);
        await new Promise(resolve => { const t = setTimeout(resolve, left); runnerWaiters.push(() => { clearTimeout(t); resolve(); }); });
      }
    }
    if (url.pathname === '/actions-runner/finish') {
      const job = jobs.find(j => j.jobId === agent.job);
      if (!job) return send(res, 409, { message: 'this runner has no job' });
      // A held job runs until the test releases it (POST /_fake/actions/release).
      if (job.held) await new Promise(resolve => job.release.push(resolve));
      job.state = 'done';
      job.result = body?.result ?? 'succeeded';
      job.finished = Date.now();
      agents.delete(agent.name);  // an ephemeral runner deregisters after its job
      publish(ss, [entry('JobCompleted', job, { runnerId: agent.id, runnerName: agent.name, result: job.result,
                                                finishTime: iso(job.finished) })]);
      return send(res, 204);
    }
    return send(res, 404, { message: 'Not Found' });
  }

  return {
    // POST /actions/runner-registration
    register(req, res, body, base) {
      const token = (req.headers.authorization ?? '').replace(/^RemoteAuth /, '');
      const account = registrations.get(token);
      if (!account) return send(res, 401, { message: 'registration token refused' });
      if (typeof body?.url !== 'string' || body?.runner_event !== 'register') return send(res, 400, { message: 'url and runner_event are required' });
      const admin = jwt({ exp: Math.floor(Date.now() / 1000) + adminTtl, account });
      admins.set(admin, { account, expires: Date.now() + adminTtl * 1000 });
      return send(res, 201, { url: `${base}/actions-service/`, token: admin });
    },
    // POST .../actions/runners/registration-token, with an installation token for `account`
    registrationToken(res, account) {
      const token = `R${randomBytes(20).toString('hex').toUpperCase()}`;
      registrations.set(token, account);
      return send(res, 201, { token, expires_at: iso(Date.now() + 3600 * 1000).replace(/\.\d+Z$/, 'Z') });
    },
    handles: path => /^\/actions-(service|queue|runner)\//.test(path),
    async route(req, res, url, body, base) {
      if (faults.left > 0 && !url.pathname.startsWith('/actions-runner/')) {
        faults.left--;
        faults.served++;
        const headers = faults.status === 429 ? { 'Retry-After': String(faults.retryAfter) } : {};
        return send(res, faults.status, { message: 'injected fault' }, headers);
      }
      if (url.pathname.startsWith('/actions-service/')) return service(req, res, url, body, base);
      if (url.pathname.startsWith('/actions-queue/')) return queue(req, res, url);
      return runner(req, res, url, body);
    },
    control(req, res, url, body) {
      switch (`${req.method} ${url.pathname}`) {
        case 'POST /_fake/actions/queue': {
          const ss = [...scaleSets.values()].find(s => s.name === body.scale_set);
          if (!ss) return send(res, 404, { message: `no scale set ${body.scale_set}` });
          const made = [];
          for (let i = 0; i < (body.count ?? 1); i++) {
            const n = nextJob++;
            const job = { jobId: `job-${n}`, requestId: body.available ? 100000 + n : 0, scaleSetId: ss.id, runId: 700 + n,
                          owner: ss.account, repository: body.repository ?? 'widgets', labels: ss.labels,
                          workflowRef: `${ss.account}/${body.repository ?? 'widgets'}/.github/workflows/ci.yml@refs/heads/main`,
                          state: body.available ? 'available' : 'assigned', queued: Date.now(),
                          assigned: body.available ? null : Date.now(), takenBy: [], held: !!body.hold, release: [] };
            jobs.push(job);
            made.push(job);
          }
          // Messages carry at most 50 entries.
          for (let i = 0; i < made.length; i += 50) {
            publish(ss, made.slice(i, i + 50).map(j => entry(body.available ? 'JobAvailable' : 'JobAssigned', j,
              body.available ? { acquireJobUrl: `${url.origin}/acquire` } : {})));
          }
          return send(res, 200, made.map(j => j.jobId));
        }
        case 'POST /_fake/actions/message': {  // a raw message body, for decoding tests
          const ss = [...scaleSets.values()].find(s => s.name === body.scale_set);
          if (!ss) return send(res, 404, { message: `no scale set ${body.scale_set}` });
          ss.messages.push({ id: ss.nextMessage++, raw: body.body, entries: [] });
          for (const wake of ss.waiters.splice(0)) wake();
          return send(res, 204);
        }
        case 'GET /_fake/actions/jobs': return send(res, 200, jobs.map(({ release, ...j }) => j));
        case 'POST /_fake/actions/release':
          for (const j of jobs) { j.held = false; for (const go of j.release.splice(0)) go(); }
          return send(res, 204);
        case 'GET /_fake/actions/state':
          return send(res, 200, { scale_sets: [...scaleSets.values()].map(ss => ({ ...scaleSetJson(ss), session: ss.session,
            owner: ss.session ? sessions.get(ss.session)?.owner : null, pending_messages: ss.messages.length,
            max_capacity: ss.maxCapacity, statistics: statistics(ss) })), agents: [...agents.values()] });
        case 'POST /_fake/actions/faults':
          faults.status = body.status ?? 503;
          faults.left = body.count ?? 1;
          faults.retryAfter = body.retry_after ?? 1;
          return send(res, 204);
        case 'GET /_fake/actions/faults':
          return send(res, 200, { left: faults.left, served: faults.served });
        case 'POST /_fake/actions/expire_queue_tokens':
          for (const s of sessions.values()) s.tokenExpires = 0;
          return send(res, 204);
        case 'POST /_fake/actions/expire_admin_tokens':
          for (const a of admins.values()) a.expires = 0;
          return send(res, 204);
      }
      return undefined;
    },
  };
}
