// The Ganglion console: chat with the agents, answer what they wait for,
// follow delegations and events. It speaks only the server's /v1 API,
// with the token in the Authorization header (never in a cookie or a URL),
// so another site cannot make requests in its name.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("ganglion-token") || "";
const client = localStorage.getItem("ganglion-client") || ("tab-" + crypto.randomUUID());
localStorage.setItem("ganglion-client", client);
let current = null; // the assistant message the current turn streams into
const streams = [];

function status(text) { $("status").textContent = text; }

// A call the server answered 503 with a Retry-After (the store was
// unavailable for a moment: a NATS server is down, or its cluster elects
// a leader, for about 5 s) is made again after that wait, at most
// maxRetryWait seconds, when it is safe to repeat: a GET, or a POST whose
// turn did not start (the error's result has no turn_id; an action that
// was applied is refused the second time). It fails after maxRetries
// retries, or once the waits would pass retryFor seconds in all.
const maxRetryWait = 10, maxRetries = 10, retryFor = 30;

// notices counts the calls waiting to be tried again: the notice shows
// while there is one.
let notices = 0;

function notice(delta) {
  notices += delta;
  $("notice").hidden = notices === 0;
}

async function api(method, path, body) {
  let waited = 0;
  for (let retries = 0; ; retries++) {
    const res = await fetch(path, {
      method,
      headers: Object.assign({ "Authorization": "Bearer " + token }, body ? { "Content-Type": "application/json" } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await res.json().catch(() => ({}));
    if (res.ok) return data;
    const err = data.error || {};
    const after = Number.parseInt(res.headers.get("Retry-After") || "", 10);
    const safe = method === "GET" || !(err.result && err.result.turn_id);
    const wait = Math.min(Number.isNaN(after) ? 0 : Math.max(after, 0.1), maxRetryWait);
    if (res.status !== 503 || !wait || !safe || retries === maxRetries || waited + wait > retryFor) {
      throw new Error(err.message || res.statusText);
    }
    notice(+1);
    try {
      await new Promise((r) => setTimeout(r, wait * 1000));
    } finally {
      notice(-1);
    }
    waited += wait;
  }
}

// stream reads a server-sent event stream with fetch (an EventSource
// cannot send the token), calling fn(name, data, id) for each event, and
// reconnects from the last ID it saw when the connection drops.
async function stream(path, fn) {
  let last = "";
  const ctl = new AbortController();
  streams.push(ctl);
  for (;;) {
    try {
      const headers = { "Authorization": "Bearer " + token, "Accept": "text/event-stream" };
      if (last) headers["Last-Event-ID"] = last;
      const res = await fetch(path, { headers, signal: ctl.signal });
      if (!res.ok) throw new Error(res.statusText);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let name = "", data = "", id = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) name = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
            else if (line.startsWith("id: ")) id = line.slice(4);
          }
          if (id) last = id;
          if (name) fn(name, data ? JSON.parse(data) : null);
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function say(role, text) {
  const li = document.createElement("li");
  li.className = role;
  li.textContent = text;
  $("messages").appendChild(li);
  li.scrollIntoView({ block: "nearest" });
  return li;
}

function here(ev) { return ev.agent === $("agent").value && ev.instance === $("instance").value; }

function onEvent(name, ev) {
  if (!ev) return;
  if (name.startsWith("pending.")) loadInbox();
  if (name.startsWith("task.")) loadTasks();
  if (!here(ev)) return;
  const log = document.createElement("li");
  log.textContent = name + (ev.turn_id ? " " + ev.turn_id : "");
  $("log").appendChild(log);
  const d = ev.data || {};
  switch (name) {
    case "turn.started":
      current = null;
      break;
    case "model.delta":
      if (d.kind !== "text") break;
      if (!current) current = say("assistant", "");
      current.textContent += d.text;
      break;
    case "tool.started":
      say("note", "[tool] " + d.tool + " " + (d.arguments || ""));
      break;
    case "tool.finished":
      say("note", "[tool] " + d.tool + (d.is_error ? " failed" : " done"));
      break;
    case "turn.finished":
      if (d.finish_reason === "paused") say("note", "The agent waits for you: see Waiting for you.");
      else if (d.finish_reason === "delegated") say("note", "Delegated: the answer comes when the delegations report back.");
      else if (d.error) say("note", "The turn failed: " + d.error);
      else if (!current && d.response) say("assistant", d.response);
      current = null;
      break;
  }
}

async function loadAgents() {
  const { agents } = await api("GET", "/v1/agents");
  const sel = $("agent");
  sel.textContent = "";
  for (const a of agents) {
    const o = document.createElement("option");
    o.value = a.name;
    o.textContent = a.name + (a.description ? " — " + a.description : "") + (a.unavailable ? " (unavailable)" : "");
    sel.appendChild(o);
  }
}

async function loadHistory() {
  $("messages").textContent = "";
  const { messages } = await api("GET", "/v1/agents/" + encodeURIComponent($("agent").value) + "/instances/" + encodeURIComponent($("instance").value) + "/history");
  for (const m of messages) {
    if (m.role === "user" || (m.role === "assistant" && m.content)) say(m.role, m.content);
  }
}

function field(form, label, input) {
  const l = document.createElement("label");
  l.textContent = label + " ";
  l.appendChild(input);
  form.appendChild(l);
  return input;
}

function button(form, text, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onClick);
  form.appendChild(b);
  return b;
}

async function act(id, action, body) {
  try {
    await api("POST", "/v1/pending/" + encodeURIComponent(id) + "/" + action, body);
    status("Answered " + id + ".");
  } catch (e) {
    status("Not answered: " + e.message);
  }
  loadInbox();
}

async function loadInbox() {
  const { items } = await api("GET", "/v1/pending");
  $("inbox-count").textContent = items.length ? "(" + items.length + ")" : "";
  const list = $("items");
  list.textContent = "";
  for (const it of items) {
    const li = document.createElement("li");
    const form = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = it.agent + "/" + it.instance + ": " + it.kind;
    form.appendChild(legend);
    const r = it.request || {};
    const text = (s) => { const p = document.createElement("p"); p.textContent = s; form.appendChild(p); };
    if (it.kind === "question") {
      text(r.question + (r.required ? " (required)" : ""));
      for (const o of r.options || []) button(form, o + (o === r.default ? " (default)" : ""), () => act(it.id, "answer", { answer: o }));
      const free = field(form, "Answer", document.createElement("input"));
      button(form, "Answer", () => act(it.id, "answer", { answer: free.value }));
      if (!r.required) button(form, "Skip", () => act(it.id, "skip"));
    } else if (it.kind === "dependency") {
      text(r.type + " " + r.name + ": " + r.description + (r.required ? " (required)" : ""));
      const input = document.createElement("input");
      input.type = (r.type === "api_key" || r.type === "env_variable") ? "password" : "text";
      input.autocomplete = "off";
      field(form, "Value", input);
      button(form, "Provide", () => { const v = input.value; input.value = ""; act(it.id, "provide", { value: v }); });
      const why = field(form, "Reason", document.createElement("input"));
      button(form, "Reject", () => act(it.id, "reject", { reason: why.value }));
    } else if (it.kind === "approval") {
      text("Call of " + r.tool + ": " + (r.explanation || ""));
      const pre = document.createElement("pre");
      pre.textContent = JSON.stringify(r.args, null, 2);
      form.appendChild(pre);
      for (const m of r.matched || []) text("rule " + m.rule + ": " + m.decision + (m.reason ? " — " + m.reason : ""));
      button(form, "Approve", () => act(it.id, "answer", { answer: "approve" }));
      button(form, "Deny", () => act(it.id, "answer", { answer: "deny" }));
    } else if (it.extension === "protocol" || it.extension === "approval") {
      // The built-ins' other kinds (an intervention after repeated
      // mistakes): what went wrong, and guidance for the agent.
      text(JSON.stringify(r));
      const g = field(form, "Guidance", document.createElement("input"));
      button(form, "Answer", () => act(it.id, "answer", { answer: g.value }));
      button(form, "Stop the agent", () => act(it.id, "reject", { reason: "stopped from the console" }));
    } else {
      // A kind of an extension's own (a WebAssembly guest's): its request
      // as it wrote it, and the actions every kind may take; the
      // extension refuses those it does not accept, with a message.
      legend.textContent += " (" + it.extension + ")";
      const pre = document.createElement("pre");
      pre.textContent = JSON.stringify(r, null, 2);
      form.appendChild(pre);
      const a = field(form, "Answer", document.createElement("input"));
      button(form, "Answer", () => act(it.id, "answer", { answer: a.value }));
      if (!it.required) button(form, "Skip", () => act(it.id, "skip"));
      const why = field(form, "Reason", document.createElement("input"));
      button(form, "Reject", () => act(it.id, "reject", { reason: why.value }));
    }
    li.appendChild(form);
    list.appendChild(li);
  }
}

async function loadTasks() {
  const { tasks } = await api("GET", "/v1/tasks");
  const tree = $("tree");
  tree.textContent = "";
  const children = {};
  for (const t of tasks) (children[t.parent_task_id || ""] ||= []).push(t);
  const add = (parent, ul) => {
    for (const t of children[parent] || []) {
      const li = document.createElement("li");
      li.textContent = t.delegated_to + ": " + t.state + " — " + t.original_request;
      const sub = document.createElement("ul");
      li.appendChild(sub);
      ul.appendChild(li);
      add(t.task_id, sub);
    }
  };
  add("", tree);
}

async function send(ev) {
  ev.preventDefault();
  const text = $("text").value.trim();
  if (!text) return;
  $("text").value = "";
  say("user", text);
  try {
    await api("POST", "/v1/agents/" + encodeURIComponent($("agent").value) + "/instances/" + encodeURIComponent($("instance").value) + "/messages",
      { text, metadata: { channel: "gui", replyTo: client } });
  } catch (e) {
    say("note", "Not sent: " + e.message);
  }
  // The turn has ended: what it left waiting, or delegated, shows now,
  // whatever the event stream has delivered yet.
  loadInbox();
  loadTasks();
}

async function connect() {
  try {
    await loadAgents();
  } catch (e) {
    status("Not connected: " + e.message);
    return;
  }
  sessionStorage.setItem("ganglion-token", token);
  $("login").hidden = true;
  $("app").hidden = false;
  status("Connected.");
  stream("/v1/events", onEvent);
  await Promise.all([loadHistory(), loadInbox(), loadTasks()]);
  stream("/v1/gui/" + encodeURIComponent(client) + "/answers", (name, rep) => {
    if (name !== "answer") return;
    const text = rep.error ? "The task failed: " + rep.error : rep.response;
    const last = $("messages").lastElementChild;
    if (last && last.className === "assistant" && last.textContent === text) return; // streamed already
    say("assistant", text);
  });
  $("text").focus();
}

$("login").addEventListener("submit", (ev) => { ev.preventDefault(); token = $("token").value.trim(); $("token").value = ""; connect(); });
$("send").addEventListener("submit", send);
$("text").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.shiftKey) send(ev); });
$("agent").addEventListener("change", loadHistory);
$("instance").addEventListener("change", loadHistory);
if (token) connect();
