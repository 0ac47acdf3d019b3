// A stateful fake of GitHub's Actions service for runner scale sets. It acts
// as GitHub does, not as our client expects: each behaviour below is what
// GitHub's own clients (actions/scaleset "S", actions-runner-controller
// "ARC") handle or what was measured against the real service, cited where it
// is made, and each can be switched per test (SPEC keys, or POST
// /_fake/actions/behaviour at run time). The facts come from
// shared/docs/reference/scale-set-vs-github-clients.md and
// scale-set-job-source.md, which cite the official sources line by line.
//
// It also plays the runner's side: a runner presents its JIT config to take
// one job assigned to its scale set, then reports it finished.
//
// Like GitHub.com, jobs arrive as JobAssigned with runnerRequestId 0 unless
// a queue call asks for request ids (then JobAvailable, acquired first, as
// on GHES). A runner takes whichever assigned job is next, not the one its
// launch was for.
//
// Behaviours (SPEC key: default):
//   poll_hold_ms: 50000      an idle long poll is held this long, then 202.
//                            GHES 3.19 holds 50.0 s (actions/scaleset#75's
//                            log); github.com ~88 s (billet's measurement).
//   queue_url: "pipelines"   messageQueueUrl as GHES's pipelines-hosted queue
//                            serves it, with its own query (?sessionId=...,
//                            ARC #3210), which the queue refuses without;
//                            "broker": github.com's broker URL, no query, the
//                            session known by its token (ARC #4470, #4154).
//   session_gone: 400        a session GitHub no longer knows: 400
//                            RunnerScaleSetSessionExpiredException (ARC
//                            #4285); 404: RunnerAdminException (actions/
//                            scaleset PR #123).
//   offline_delete_seconds: 86400
//                            a scale set with no session this long is
//                            deleted (ARC #3935, #3205, #4370); session
//                            create then answers 404
//                            RunnerScaleSetNotFoundException.
//   custom_labels: true      false: GHES 3.9-3.20 without
//                            DistributedTask.AllowRunnerScaleSetCustomLabels
//                            keeps only the scale set's name as its label
//                            ("silently dropped", S README).
//   pickup_window_ms: 300000 an assigned job no runner took in this window is
//                            cancelled (JobCompleted, result "canceled", no
//                            runner) and assigned again, same jobId, up to 3
//                            times (S README; ARC #4602: 5 min apart), then
//                            ends canceled.
//   empty_body_messages: false
//                            a change of the statistics alone (a runner
//                            registered or gone) is a message whose body is
//                            "" (S client.go reads len(body) == 0 as no jobs).
//   time_offsets: false      times with a +01:00 offset instead of Z (.NET
//                            and Go both write offsets; S reads any RFC 3339).
//   batch_ms: 0              entries published within this window go into one
//                            message (at most 50): GitHub batches, for one,
//                            a job's completion with the next job's assignment
//                            (scale-set-job-source.md §1.2, billet's handle).
//   admin_token_ttl_seconds, queue_token_ttl_seconds, session_idle_seconds.
//
// Every answer carries ActivityId and X-GitHub-Request-Id (S error.go reads
// both), and every refusal GitHub's exception body: {"$id","innerException",
// "message","typeName":"<namespace>.<Type>, <assembly>","typeKey",
// "errorCode","eventId"} (typeName as ARC #4285 and #3935 quote it).
//
// Routes (mounted by fake_github.mjs):
//   POST /actions/runner-registration                 RemoteAuth <registration token>
//   /actions-service/_apis/...                        Bearer <admin token> (acquirejobs: the queue token)
//   /actions-queue/...                                Bearer <queue token>
//   POST /actions-runner/take {jit, wait_ms}   parked until a job is assigned
//   POST /actions-runner/finish {jit, result}  parked while the job is held   (the fake runner)
// Control: POST /_fake/actions/queue {scale_set, count, repository, available, hold, labels},
//          POST /_fake/actions/release (held jobs finish),
//          GET /_fake/actions/jobs, GET /_fake/actions/state,
//          POST /_fake/actions/behaviour {key: value, ...},
//          POST /_fake/actions/message {scale_set, body}: a raw message body,
//          POST /_fake/actions/delete_scale_set {scale_set},
//          POST /_fake/actions/ghost {scale_set, name}: a registration no runner ever used,
//          POST /_fake/actions/cancel {scale_set}: every job no runner took is cancelled,
//          POST /_fake/actions/await {event, job_id, count}: parked until "session" (one
//          is open), "requeued" or "canceled" (some job was), "done" (job job_id
//          finished) or "waiting" (count runners are parked for a job),
//          POST /_fake/actions/expire_sessions, POST /_fake/actions/expire_queue_tokens,
//          POST /_fake/actions/expire_admin_tokens,
//          POST /_fake/actions/remote_auth_faults {status, count}: the next `count`
//            runner-registration calls answer 401 or 403 although the token
//            is good (S and ARC retry both: a new registration token is not
//            always accepted at once),
//          POST /_fake/actions/faults {status, count, retry_after}: the next `count`
//            requests of the control plane (service and queue routes, not the
//            runner's) are answered `status` (a 5xx, or 429/503 with Retry-After)
import { randomBytes, randomUUID } from 'node:crypto';

const kMaxRequeues = 3;  // S README: "up to 3 times"

export function createActions(spec, groupsFor, plainSend) {
  const behaviour = {
    poll_hold_ms: 50000, queue_url: 'pipelines', session_gone: 400, offline_delete_seconds: 86400,
    custom_labels: true, pickup_window_ms: 300000, empty_body_messages: false, time_offsets: false, batch_ms: 0,
    admin_token_ttl_seconds: 3600, queue_token_ttl_seconds: 3600, session_idle_seconds: 60,
  };
  for (const k of Object.keys(behaviour)) if (spec[k] !== undefined) behaviour[k] = spec[k];
  const registrations = new Map(); // registration token -> account
  const admins = new Map();        // admin token -> {account, expires}
  const scaleSets = new Map();     // id -> {id, name, runnerGroupId, labels, account, session, messages, nextMessage, waiters, maxCapacity, lastHeld}
  const sessions = new Map();      // session id -> {scaleSet, owner, token, tokenExpires, lastSeen}
  const agents = new Map();        // name -> {id, name, scaleSetId, busy, job}
  const jobs = [];                 // {jobId, requestId, scaleSetId, state, runnerName, takenBy: [], result, repository, requeues}
  // Test control, not GitHub: callers parked by /_fake/actions/await until
  // a condition on the fake's state holds, so that tests and benchmarks
  // wait on the state rather than on a clock or a polling loop.
  const conditions = {
    session: () => [...scaleSets.values()].some(ss => ss.session),           // a message session is open
    requeued: () => jobs.some(j => j.requeues > 0),                         // a pickup window passed
    canceled: () => jobs.some(j => j.state === 'canceled'),
    done: b => jobs.some(j => j.jobId === b.job_id && j.state === 'done'),  // job b.job_id finished
    waiting: b => [...agents.values()].filter(a => a.waiting).length >= (b.count ?? 1),  // runners parked for a job
  };
  let awaiting = [];               // {met, wake}
  function wakeAwaiting() {
    const ready = awaiting.filter(a => a.met());
    awaiting = awaiting.filter(a => !ready.includes(a));
    for (const a of ready) a.wake();
  }
  const runnerWaiters = [];        // takes parked until a job is assigned
  const faults = { status: 0, left: 0, retryAfter: 0, served: 0 };
  const remoteAuthFaults = { status: 401, left: 0 };
  let nextId = 5000;
  let nextJob = 1;

  // Every answer of the service carries GitHub's two request ids.
  function send(res, status, body, headers = {}) {
    return plainSend(res, status, body, { ActivityId: randomUUID(), 'X-GitHub-Request-Id': randomBytes(8).toString('hex').toUpperCase(), ...headers });
  }
  function exception(res, status, type, message, headers = {}) {
    return send(res, status, { $id: '1', innerException: null, message,
      typeName: `GitHub.Actions.Runtime.WebApi.${type}, GitHub.Actions.Runtime.WebApi`, typeKey: type,
      errorCode: 0, eventId: 3000 }, headers);
  }

  const b64url = o => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = claims => `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}.${randomBytes(16).toString('base64url')}`;
  // An instant as GitHub writes it: UTC with Z, or (time_offsets) the same
  // instant at +01:00, which a reader that ignores offsets gets an hour wrong.
  function iso(ms) {
    if (!behaviour.time_offsets) return new Date(ms).toISOString();
    return new Date(ms + 3600000).toISOString().replace('Z', '+01:00');
  }

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

  // One job entry as S types.go's JobMessageBase (and its per-type extras)
  // defines it: every field, the optional times only once they are known.
  function entry(type, job, extra = {}) {
    const e = { messageType: type, runnerRequestId: job.requestId, repositoryName: job.repository, ownerName: job.owner,
                jobId: job.jobId, jobWorkflowRef: job.workflowRef, jobDisplayName: job.displayName,
                workflowRunId: job.runId, eventName: 'push', requestLabels: job.labels, queueTime: iso(job.queued) };
    if (job.assigned) e.scaleSetAssignTime = iso(job.assigned);
    if (job.runnerAssigned) e.runnerAssignTime = iso(job.runnerAssigned);
    return { ...e, ...extra };
  }

  function publish(ss, entries) {
    const last = ss.messages[ss.messages.length - 1];
    const batching = behaviour.batch_ms > 0;
    if (batching && last && !last.delivered && !last.raw && Date.now() - last.at < behaviour.batch_ms &&
        last.entries.length + entries.length <= 50) {
      last.entries.push(...entries);
    } else {
      ss.messages.push({ id: ss.nextMessage++, entries, at: Date.now(), delivered: false });
    }
    const wake = () => { for (const w of ss.waiters.splice(0)) w(); };
    if (batching) setTimeout(wake, behaviour.batch_ms).unref(); else wake();
    for (const w of runnerWaiters.splice(0)) w();  // an assignment may be among them
  }

  // The statistics changed with no job entry to carry them (empty_body_messages).
  function statisticsChanged(ss) {
    if (!behaviour.empty_body_messages || !ss) return;
    ss.messages.push({ id: ss.nextMessage++, raw: '', entries: [] });
    for (const wake of ss.waiters.splice(0)) wake();
  }

  // An assigned job no runner takes within the pickup window is cancelled
  // and assigned again (pickup_window_ms).
  function watchPickup(ss, job) {
    const assignedAt = job.assigned;
    setTimeout(() => {
      if (job.state !== 'assigned' || job.assigned !== assignedAt || !scaleSets.has(ss.id)) return;
      job.requeues++;
      publish(ss, [entry('JobCompleted', job, { result: 'canceled', runnerId: 0, runnerName: '', finishTime: iso(Date.now()) })]);
      wakeAwaiting();
      if (job.requeues >= kMaxRequeues) {
        job.state = 'canceled';
        job.result = 'canceled';
        return;
      }
      job.assigned = Date.now();
      publish(ss, [entry('JobAssigned', job)]);
      watchPickup(ss, job);
    }, behaviour.pickup_window_ms).unref();
  }

  function assign(ss, job) {
    job.state = 'assigned';
    job.assigned = Date.now();
    watchPickup(ss, job);
  }

  function sessionGone(res, sid) {
    if (behaviour.session_gone === 404) {
      return exception(res, 404, 'RunnerAdminException', `Message session ${sid} doesn't exist`);
    }
    return exception(res, 400, 'RunnerScaleSetSessionExpiredException', `The session identifier ${sid} is not valid.`);
  }

  function liveSession(ss) {
    const s = ss.session ? sessions.get(ss.session) : undefined;
    if (s && Date.now() - s.lastSeen < behaviour.session_idle_seconds * 1000) return s;
    if (s) sessions.delete(ss.session);  // abandoned: expired, as GitHub's do after a while
    ss.session = null;
    return undefined;
  }

  // Scale sets without a session for offline_delete_seconds are gone.
  function deleteOffline() {
    for (const ss of scaleSets.values()) {
      if (liveSession(ss)) { ss.lastHeld = Date.now(); continue; }
      if (Date.now() - ss.lastHeld >= behaviour.offline_delete_seconds * 1000) deleteScaleSet(ss);
    }
  }

  function deleteScaleSet(ss) {
    scaleSets.delete(ss.id);
    for (const [id, s] of sessions) if (s.scaleSet === ss.id) sessions.delete(id);
    for (const [name, a] of agents) if (a.scaleSetId === ss.id) agents.delete(name);
    for (const wake of ss.waiters.splice(0)) wake();
  }

  function newSession(ss, owner) {
    const s = { id: randomUUID(), scaleSet: ss.id, owner, token: randomBytes(24).toString('base64url'),
                tokenExpires: Date.now() + behaviour.queue_token_ttl_seconds * 1000, lastSeen: Date.now() };
    sessions.set(s.id, s);
    ss.session = s.id;
    ss.lastHeld = Date.now();
    wakeAwaiting();
    return s;
  }

  function queueUrl(base, ss, s) {
    if (behaviour.queue_url === 'broker') return `${base}/actions-queue/scalesets/message`;
    return `${base}/actions-queue/_apis/runtime/runnerscalesets/${ss.id}/messages?sessionId=${s.id}`;
  }

  function sessionJson(base, ss, s) {
    return { sessionId: s.id, ownerName: s.owner, runnerScaleSet: scaleSetJson(ss),
             messageQueueUrl: queueUrl(base, ss, s), messageQueueAccessToken: s.token, statistics: statistics(ss) };
  }

  function scaleSetJson(ss) {
    return { id: ss.id, name: ss.name, runnerGroupId: ss.runnerGroupId,
             labels: ss.labels.map(n => ({ name: n, type: 'System' })), RunnerSetting: { disableUpdate: true } };
  }

  // The labels a scale set keeps (custom_labels).
  function keptLabels(name, asked) {
    if (!behaviour.custom_labels) return [name];
    return (asked ?? []).map(l => l.name);
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
        assign(ss, job);
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
      if (!groupsFor(account).some(g => g.id === body.runnerGroupId)) return exception(res, 404, 'RunnerGroupNotFoundException', `Runner group ${body.runnerGroupId} not found`);
      const ss = { id: nextId++, name: body.name, runnerGroupId: body.runnerGroupId, labels: keptLabels(body.name, body.labels),
                   account, session: null, messages: [], nextMessage: 1, waiters: [], maxCapacity: null, lastHeld: Date.now() };
      scaleSets.set(ss.id, ss);
      return send(res, 200, scaleSetJson(ss));
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)$/))) {
      const ss = scaleSets.get(Number(m[1]));
      if (!ss || ss.account !== account) return exception(res, 404, 'RunnerScaleSetNotFoundException', `No RunnerScaleSet found with identifier ${m[1]}.`);
      if (req.method === 'PATCH' && body?.labels) ss.labels = keptLabels(ss.name, body.labels);
      return send(res, 200, scaleSetJson(ss));
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)\/sessions(?:\/([^/]+))?$/))) {
      const ss = scaleSets.get(Number(m[1]));
      if (req.method === 'POST' && !m[2]) {
        if (!ss || ss.account !== account) return exception(res, 404, 'RunnerScaleSetNotFoundException', `No RunnerScaleSet found with identifier ${m[1]}.`);
        const held = liveSession(ss);
        if (held) {
          return exception(res, 409, 'RunnerScaleSetSessionConflictException',
                           `The runner scale set ${ss.name} already has an active session for owner ${held.owner}.`);
        }
        return send(res, 200, sessionJson(base, ss, newSession(ss, body?.ownerName ?? '')));
      }
      const s = sessions.get(m[2]);
      if (!ss || !s || s.scaleSet !== ss.id) return sessionGone(res, m[2]);
      if (req.method === 'PATCH') {
        s.token = randomBytes(24).toString('base64url');
        s.tokenExpires = Date.now() + behaviour.queue_token_ttl_seconds * 1000;
        s.lastSeen = Date.now();
        return send(res, 200, sessionJson(base, ss, s));
      }
      if (req.method === 'DELETE') {
        sessions.delete(s.id);
        ss.session = null;
        ss.lastHeld = Date.now();
        return send(res, 204);
      }
    }
    if ((m = path.match(/^runtime\/runnerscalesets\/(\d+)\/generatejitconfig$/)) && req.method === 'POST') {
      const ss = scaleSets.get(Number(m[1]));
      if (!ss || ss.account !== account) return exception(res, 404, 'RunnerScaleSetNotFoundException', `No RunnerScaleSet found with identifier ${m[1]}.`);
      if (typeof body?.name !== 'string' || body.name === '') return send(res, 400, { message: 'name is required' });
      if (agents.has(body.name)) return exception(res, 409, 'AgentExistsException', `Agent ${body.name} already exists in pool 0.`);
      const agent = { id: nextId++, name: body.name, scaleSetId: ss.id, busy: false, job: null };
      agents.set(agent.name, agent);
      statisticsChanged(ss);
      const config = { scale_set_id: ss.id, runner_name: agent.name, agent_id: agent.id, work_folder: body.workFolder ?? '', service: base };
      return send(res, 200, { runner: { id: agent.id, name: agent.name, runnerScaleSetId: ss.id },
                              encodedJITConfig: Buffer.from(JSON.stringify(config)).toString('base64') });
    }
    if (path === 'distributedtask/pools/0/agents' && req.method === 'GET') {
      // S RunnerReferenceList: {count, value: [{id, name, runnerScaleSetId}]}.
      const a = agents.get(url.searchParams.get('agentName'));
      return send(res, 200, { count: a ? 1 : 0, value: a ? [{ id: a.id, name: a.name, runnerScaleSetId: a.scaleSetId, busy: a.busy }] : [] });
    }
    if ((m = path.match(/^distributedtask\/pools\/0\/agents\/(\d+)$/))) {
      const a = [...agents.values()].find(x => x.id === Number(m[1]));
      if (!a) return exception(res, 404, 'AgentNotFoundException', `No agent found in pool 0 with identifier ${m[1]}.`);
      if (req.method === 'GET') return send(res, 200, { id: a.id, name: a.name, runnerScaleSetId: a.scaleSetId, busy: a.busy });
      if (req.method === 'DELETE') {
        if (a.busy) return exception(res, 400, 'JobStillRunningException', `Agent ${a.id} is running a job and cannot be removed.`);
        agents.delete(a.name);
        statisticsChanged(scaleSets.get(a.scaleSetId));
        return send(res, 204);
      }
    }
    return send(res, 404, { message: 'Not Found' });
  }

  // The queue's routes: GET {messageQueueUrl}[&lastMessageId=N] and DELETE
  // {messageQueueUrl path}/{id}, with the URL's own query kept (queue_url).
  function queueRoute(req, url) {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    let m;
    if ((m = url.pathname.match(/^\/actions-queue\/_apis\/runtime\/runnerscalesets\/(\d+)\/messages(?:\/(\d+))?$/))) {
      const sid = url.searchParams.get('sessionId');
      if (!sid) return { refuse: [400, 'ArgumentNullException', 'Value cannot be null. (Parameter \'sessionId\')'] };
      return { sid, msg: m[2], token, scaleSet: Number(m[1]) };
    }
    if ((m = url.pathname.match(/^\/actions-queue\/scalesets\/message(?:\/(\d+))?$/))) {
      // The broker knows the session by its token; a token it no longer
      // knows is unauthorized, and the refresh then finds the session gone.
      const s = [...sessions.values()].find(x => x.token === token);
      if (!s) return { refuse: [401, 'UnauthorizedException', 'The message queue token is not valid.'] };
      return { sid: s.id, msg: m[1], token, scaleSet: s.scaleSet };
    }
    return { refuse: [404, 'NotFoundException', 'Not Found'] };
  }

  async function queue(req, res, url) {
    const q = queueRoute(req, url);
    if (q.refuse) return exception(res, ...q.refuse);
    const s = sessions.get(q.sid);
    const ss = s && scaleSets.get(s.scaleSet);
    if (!s || !ss || s.scaleSet !== q.scaleSet) return sessionGone(res, q.sid);
    if (s.token !== q.token || s.tokenExpires <= Date.now()) return send(res, 401, { message: 'queue token expired' });
    s.lastSeen = Date.now();
    if (req.method === 'DELETE' && q.msg) {
      ss.messages = ss.messages.filter(x => x.id !== Number(q.msg));
      return send(res, 204);
    }
    if (req.method !== 'GET' || q.msg) return send(res, 404, { message: 'Not Found' });
    const cap = req.headers['x-scalesetmaxcapacity'];
    if (cap === undefined || !/^\d+$/.test(cap)) return send(res, 400, { message: 'X-ScaleSetMaxCapacity is required' });
    ss.maxCapacity = Number(cap);
    const after = Number(url.searchParams.get('lastMessageId') ?? 0);
    const deadline = Date.now() + behaviour.poll_hold_ms;
    let closed = false;
    res.on('close', () => { closed = true; });
    for (;;) {
      // Unacknowledged messages come back, in order, after lastMessageId (all of them from 0).
      const next = ss.messages.find(x => x.id > after) ?? (after > 0 ? undefined : ss.messages[0]);
      if (sessions.get(q.sid) !== s || !scaleSets.has(ss.id)) return sessionGone(res, q.sid);
      if (closed) return undefined;  // the client gave up on this poll: nothing is answered, nothing lost
      if (next && !(behaviour.batch_ms > 0 && !next.delivered && Date.now() - next.at < behaviour.batch_ms)) {
        s.lastSeen = Date.now();
        next.delivered = true;
        return send(res, 200, { messageId: next.id, messageType: 'RunnerScaleSetJobMessages',
                                body: next.raw ?? JSON.stringify(next.entries), statistics: statistics(ss) });
      }
      const left = deadline - Date.now();
      if (left <= 0) { s.lastSeen = Date.now(); return send(res, 202); }
      await new Promise(resolve => {
        const t = setTimeout(resolve, Math.min(left, 1000));  // a second at a time: the session stays seen
        ss.waiters.push(() => { clearTimeout(t); resolve(); });
      });
      s.lastSeen = Date.now();
    }
  }

  async function runner(req, res, url, body) {
    const config = decodeJit(body?.jit);
    const agent = config && agents.get(config.runner_name);
    if (!agent || agent.id !== config.agent_id) return send(res, 401, { message: 'the JIT config is not a registered runner' });
    // GitHub's REST runner list says "online" for a runner that has connected and "offline"
    // for one that has not (REST docs, actions/self-hosted-runners, the runner's status).
    agent.online = true;
    const ss = scaleSets.get(agent.scaleSetId);
    if (url.pathname === '/actions-runner/take') {
      // Parked until a job is assigned to the scale set, or wait_ms passes.
      if (agent.job) return send(res, 409, { message: 'this runner already took a job: JIT runners run one' });
      const deadline = Date.now() + (body?.wait_ms ?? 120000);
      agent.waiting = true;  // state only: a runner parked for a job
      wakeAwaiting();
      res.on('close', () => { agent.waiting = false; });
      for (;;) {
        if (!agents.has(agent.name)) return send(res, 401, { message: 'the runner was removed' });
        const job = jobs.find(j => j.scaleSetId === ss.id && j.state === 'assigned');
        if (job) {
          job.state = 'running';
          job.runnerName = agent.name;
          job.runnerAssigned = Date.now();
          job.takenBy.push(agent.name);
          agent.busy = true;
          agent.job = job.jobId;
          publish(ss, [entry('JobStarted', job, { runnerId: agent.id, runnerName: agent.name })]);
          return send(res, 200, { job_id: job.jobId, repository: job.repository });
        }
        const left = deadline - Date.now();
        if (left <= 0) return send(res, 204);
        await new Promise(resolve => { const t = setTimeout(resolve, Math.min(left, 1000)); runnerWaiters.push(() => { clearTimeout(t); resolve(); }); });
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
      wakeAwaiting();
      return send(res, 204);
    }
    return send(res, 404, { message: 'Not Found' });
  }

  function queueJobs(url, body) {
    const ss = [...scaleSets.values()].find(s => s.name === body.scale_set);
    if (!ss) return null;
    const made = [];
    for (let i = 0; i < (body.count ?? 1); i++) {
      const n = nextJob++;
      const repository = body.repository ?? 'widgets';
      const job = { jobId: `job-${n}`, requestId: body.available ? 100000 + n : 0, scaleSetId: ss.id, runId: 700 + n,
                    owner: ss.account, repository, labels: body.labels ?? [ss.name], displayName: body.display_name ?? 'build',
                    workflowRef: `${ss.account}/${repository}/.github/workflows/ci.yml@refs/heads/main`,
                    state: body.available ? 'available' : 'assigned', queued: Date.now(), assigned: null,
                    runnerAssigned: null, takenBy: [], held: !!body.hold, release: [], requeues: 0 };
      jobs.push(job);
      if (!body.available) assign(ss, job);
      made.push(job);
    }
    // Messages carry at most 50 entries (S README).
    for (let i = 0; i < made.length; i += 50) {
      publish(ss, made.slice(i, i + 50).map(j => entry(body.available ? 'JobAvailable' : 'JobAssigned', j,
        body.available ? { acquireJobUrl: `${url.origin}/acquire` } : {})));
    }
    return made;
  }

  return {
    // POST /actions/runner-registration
    register(req, res, body, base) {
      const token = (req.headers.authorization ?? '').replace(/^RemoteAuth /, '');
      const account = registrations.get(token);
      if (!account) return send(res, 401, { message: 'registration token refused' });
      if (remoteAuthFaults.left > 0) {
        remoteAuthFaults.left--;
        return send(res, remoteAuthFaults.status, { message: 'The registration token is not valid yet.' });
      }
      if (typeof body?.url !== 'string' || body?.runner_event !== 'register') return send(res, 400, { message: 'url and runner_event are required' });
      const ttl = behaviour.admin_token_ttl_seconds;
      const admin = jwt({ exp: Math.floor(Date.now() / 1000) + ttl, account });
      admins.set(admin, { account, expires: Date.now() + ttl * 1000 });
      return send(res, 201, { url: `${base}/actions-service/`, token: admin });
    },
    // POST .../actions/runners/registration-token, with an installation token for `account`
    registrationToken(res, account) {
      const token = `R${randomBytes(20).toString('hex').toUpperCase()}`;
      registrations.set(token, account);
      return send(res, 201, { token, expires_at: new Date(Date.now() + 3600 * 1000).toISOString().replace(/\.\d+Z$/, 'Z') });
    },
    handles: path => /^\/actions-(service|queue|runner)\//.test(path),
    // The scale sets' runners of `account`'s runner group `gid`, as GitHub's
    // REST runner list shows them (fake_github.mjs lists them).
    groupRunners(account, gid) {
      return [...agents.values()].filter(a => {
        const ss = scaleSets.get(a.scaleSetId);
        return ss && ss.account === account && ss.runnerGroupId === gid;
      }).map(a => ({ id: a.id, name: a.name, os: 'Linux', status: a.online ? 'online' : 'offline', busy: a.busy,
                     ephemeral: true, runner_group_id: gid, labels: [] }));
    },
    async route(req, res, url, body, base) {
      deleteOffline();
      if (faults.left > 0 && !url.pathname.startsWith('/actions-runner/')) {
        faults.left--;
        faults.served++;
        const headers = faults.status === 429 || faults.status === 503 ? { 'Retry-After': String(faults.retryAfter) } : {};
        return send(res, faults.status, { message: 'injected fault' }, headers);
      }
      if (url.pathname.startsWith('/actions-service/')) return service(req, res, url, body, base);
      if (url.pathname.startsWith('/actions-queue/')) return queue(req, res, url);
      return runner(req, res, url, body);
    },
    control(req, res, url, body) {
      const named = () => [...scaleSets.values()].find(s => s.name === body?.scale_set);
      switch (`${req.method} ${url.pathname}`) {
        case 'POST /_fake/actions/queue': {
          const made = queueJobs(url, body);
          if (!made) return plainSend(res, 404, { message: `no scale set ${body.scale_set}` });
          return plainSend(res, 200, made.map(j => j.jobId));
        }
        case 'POST /_fake/actions/message': {  // a raw message body, for decoding tests
          const ss = named();
          if (!ss) return plainSend(res, 404, { message: `no scale set ${body.scale_set}` });
          ss.messages.push({ id: ss.nextMessage++, raw: body.body, entries: [] });
          for (const wake of ss.waiters.splice(0)) wake();
          return plainSend(res, 204);
        }
        case 'POST /_fake/actions/cancel': {
          // Jobs cancelled before any runner took them (a user's cancel,
          // fail-fast, cancel-in-progress): GitHub says JobCompleted,
          // result "canceled", naming no runner (S README).
          const ss = named();
          if (!ss) return plainSend(res, 404, { message: `no scale set ${body?.scale_set}` });
          const cancelled = jobs.filter(j => j.scaleSetId === ss.id && (j.state === 'assigned' || j.state === 'available'));
          for (const job of cancelled) {
            job.state = 'canceled';
            job.result = 'canceled';
          }
          if (cancelled.length) {
            publish(ss, cancelled.map(j => entry('JobCompleted', j, { result: 'canceled', runnerId: 0, runnerName: '',
                                                                      finishTime: iso(Date.now()) })));
          }
          wakeAwaiting();
          return plainSend(res, 200, cancelled.map(j => j.jobId));
        }
        case 'POST /_fake/actions/await': {
          const condition = conditions[body?.event];
          if (!condition) return plainSend(res, 400, { message: `no event ${body?.event}` });
          const met = () => condition(body);
          if (met()) return plainSend(res, 204);
          awaiting.push({ met, wake: () => plainSend(res, 204) });
          return 'parked';  // answered when the event happens
        }
        case 'POST /_fake/actions/behaviour':
          for (const [k, v] of Object.entries(body ?? {})) {
            if (!(k in behaviour)) return plainSend(res, 400, { message: `no behaviour ${k}` });
            behaviour[k] = v;
          }
          return plainSend(res, 204);
        case 'POST /_fake/actions/ghost': {
          // A registration left behind: minted (generatejitconfig) for a
          // runner that never started, as a control plane that crashed
          // between the mint and the launch leaves one. GitHub keeps it,
          // offline, until someone removes it ("zombie offline runner
          // registrations", peers-2026-12.md §2).
          const ss = named();
          if (!ss) return plainSend(res, 404, { message: `no scale set ${body?.scale_set}` });
          const agent = { id: nextId++, name: body.name, scaleSetId: ss.id, busy: false, job: null };
          agents.set(agent.name, agent);
          statisticsChanged(ss);
          return plainSend(res, 200, { id: agent.id });
        }
        case 'POST /_fake/actions/delete_scale_set': {
          const ss = named();
          if (!ss) return plainSend(res, 404, { message: `no scale set ${body?.scale_set}` });
          deleteScaleSet(ss);
          return plainSend(res, 204);
        }
        case 'GET /_fake/actions/jobs': return plainSend(res, 200, jobs.map(({ release, ...j }) => j));
        case 'POST /_fake/actions/release':
          for (const j of jobs) { j.held = false; for (const go of j.release.splice(0)) go(); }
          return plainSend(res, 204);
        case 'GET /_fake/actions/state':
          deleteOffline();
          return plainSend(res, 200, { scale_sets: [...scaleSets.values()].map(ss => ({ ...scaleSetJson(ss), session: ss.session,
            owner: ss.session ? sessions.get(ss.session)?.owner : null, pending_messages: ss.messages.length,
            max_capacity: ss.maxCapacity, statistics: statistics(ss) })), agents: [...agents.values()] });
        case 'POST /_fake/actions/faults':
          faults.status = body.status ?? 503;
          faults.left = body.count ?? 1;
          faults.retryAfter = body.retry_after ?? 1;
          return plainSend(res, 204);
        case 'GET /_fake/actions/faults':
          return plainSend(res, 200, { left: faults.left, served: faults.served });
        case 'POST /_fake/actions/remote_auth_faults':
          remoteAuthFaults.status = body.status ?? 401;
          remoteAuthFaults.left = body.count ?? 1;
          return plainSend(res, 204);
        case 'POST /_fake/actions/expire_sessions':
          for (const ss of scaleSets.values()) ss.session = null;
          sessions.clear();
          for (const ss of scaleSets.values()) for (const wake of ss.waiters.splice(0)) wake();
          return plainSend(res, 204);
        case 'POST /_fake/actions/expire_queue_tokens':
          for (const s of sessions.values()) s.tokenExpires = 0;
          return plainSend(res, 204);
        case 'POST /_fake/actions/expire_admin_tokens':
          for (const a of admins.values()) a.expires = 0;
          return plainSend(res, 204);
      }
      return undefined;
    },
  };
}
