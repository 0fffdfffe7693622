// A scenario agent on the reference TypeScript SDK (pinned in package.json) for the edge
// cases of questions and background work. Like agent.mjs it is an oracle: the SDK parses
// every request, notification and response our client sends with its own zod validators.
//
// Usage: node scenario_agent.mjs [WORKDIR]
//   Everything the SDK accepted from our client is appended as JSON lines ({kind, value}) to
//   ORACLE_LOG, or to WORKDIR/oracle.jsonl. The background scenarios wait for trigger files
//   in WORKDIR (the test creates them), so nothing depends on timing.
//
// The first word of the prompt picks the scenario:
//   form        a form question with every field type the v2 schema allows; the agent checks
//               the answer against that schema itself and reports, in one agent message,
//               `answer: <JSON of the response>` and `check: ok` or `check: <problems>`
//   url         a URL-mode question (elicitationId "el-1"); reports `answer: ...`; after an
//               accept it sends elicitation/complete
//   cancel-ask  a tool call in progress; waits for session/cancel, then asks a form question
//               (recorded as "late_question"), then idles with stopReason "cancelled"
//   background  idles (end_turn) with terminal t1 and tool call c1 in `background` (both with
//               capabilities.cancel). Then, on trigger files in WORKDIR:
//                 step2   c1 completes, c2 (no cancel) starts: background [t1, c2]
//                 (terminal/cancel of t1: t1 exits SIGTERM: background [c2])
//                 finish  c2 completes: background []
//   after-idle  idles with tool call c9 (capabilities.cancel) in `background`; on the trigger
//               file "ask" it sends a permission request for c9 ("late_permission") and then
//               a question scoped to c9 ("late_answer"); then c9 completes: background []
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const workdir = process.argv[2] ?? process.cwd();
const logPath = process.env.ORACLE_LOG ?? join(workdir, "oracle.jsonl");
function record(kind, value) {
  appendFileSync(logPath, JSON.stringify({ kind, value }) + "\n");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function trigger(name) {
  while (!existsSync(join(workdir, name))) await sleep(50);
}

const cancelled = new Map(); // sessionId -> resolve of the wait for session/cancel
const stopped = new Map(); // terminal id -> resolve of the wait for terminal/cancel

/** Every field type of the v2 schema: strings with each format and length limits, numbers
 * and integers with bounds, booleans, single- and multi-select enums with and without
 * titles, defaults and required fields. */
const FORM = {
  type: "object",
  title: "Deployment",
  properties: {
    name: { type: "string", title: "Name", minLength: 2, maxLength: 12 },
    email: { type: "string", title: "Email", format: "email" },
    site: { type: "string", title: "Site", format: "uri" },
    day: { type: "string", title: "Day", format: "date" },
    when: { type: "string", title: "When", format: "date-time" },
    note: { type: "string", title: "Note", description: "optional, left empty" },
    code: { type: "string", title: "Code", pattern: "^[A-Z]{3}$" },
    greeting: { type: "string", title: "Greeting", default: "hello" },
    ratio: { type: "number", title: "Ratio", minimum: 0.5, maximum: 2.5 },
    scale: { type: "number", title: "Scale", default: 1.5 },
    budget: { type: "number", title: "Budget" },
    count: { type: "integer", title: "Count", minimum: 1, maximum: 9 },
    retries: { type: "integer", title: "Retries", default: 3 },
    fast: { type: "boolean", title: "Fast" },
    verbose: { type: "boolean", title: "Verbose", default: true },
    dry: { type: "boolean", title: "Dry run" },
    color: { type: "string", title: "Color", enum: ["red", "green", "blue"] },
    size: {
      type: "string",
      title: "Size",
      oneOf: [
        { const: "s", title: "Small" },
        { const: "l", title: "Large" },
      ],
      default: "s",
    },
    tags: {
      type: "array",
      title: "Tags",
      minItems: 1,
      maxItems: 2,
      items: { type: "string", enum: ["alpha", "beta", "gamma"] },
    },
    regions: {
      type: "array",
      title: "Regions",
      items: {
        anyOf: [
          { const: "eu", title: "Europe" },
          { const: "us", title: "Americas" },
          { const: "ap", title: "Asia" },
        ],
      },
      default: ["eu"],
    },
  },
  required: ["name", "email", "ratio", "count", "fast", "color", "tags"],
};

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function choicesOf(prop) {
  if (prop.type === "array") {
    const items = prop.items;
    return items.enum ?? items.anyOf.map((o) => o.const);
  }
  return prop.enum ?? (prop.oneOf ? prop.oneOf.map((o) => o.const) : null);
}

/** What is wrong with `content` for `schema` (the agent's own check), as strings. */
function problems(schema, content) {
  const out = [];
  for (const name of schema.required ?? []) {
    if (!(name in content)) out.push(`${name}: missing`);
  }
  for (const [name, value] of Object.entries(content)) {
    const prop = schema.properties[name];
    if (prop === undefined) {
      out.push(`${name}: not asked for`);
      continue;
    }
    const choices = choicesOf(prop);
    if (prop.type === "string") {
      if (typeof value !== "string") out.push(`${name}: not a string`);
      else {
        if (prop.minLength != null && value.length < prop.minLength) out.push(`${name}: too short`);
        if (prop.maxLength != null && value.length > prop.maxLength) out.push(`${name}: too long`);
        if (prop.pattern != null && !new RegExp(prop.pattern, "u").test(value)) out.push(`${name}: no match`);
        if (prop.format === "email" && !EMAIL.test(value)) out.push(`${name}: not an email`);
        if (prop.format === "uri" && !URL.canParse(value)) out.push(`${name}: not a uri`);
        if (prop.format === "date" && !DATE.test(value)) out.push(`${name}: not a date`);
        if (prop.format === "date-time" && !DATE_TIME.test(value)) out.push(`${name}: not a date-time`);
        if (choices && !choices.includes(value)) out.push(`${name}: not a choice`);
      }
    } else if (prop.type === "number" || prop.type === "integer") {
      if (typeof value !== "number" || !Number.isFinite(value)) out.push(`${name}: not a number`);
      else {
        if (prop.type === "integer" && !Number.isInteger(value)) out.push(`${name}: not an integer`);
        if (prop.minimum != null && value < prop.minimum) out.push(`${name}: below minimum`);
        if (prop.maximum != null && value > prop.maximum) out.push(`${name}: above maximum`);
      }
    } else if (prop.type === "boolean") {
      if (typeof value !== "boolean") out.push(`${name}: not a boolean`);
    } else if (prop.type === "array") {
      if (!Array.isArray(value)) out.push(`${name}: not a list`);
      else {
        if (value.some((v) => !choices.includes(v))) out.push(`${name}: not a choice`);
        if (prop.minItems != null && value.length < prop.minItems) out.push(`${name}: too few`);
        if (prop.maxItems != null && value.length > prop.maxItems) out.push(`${name}: too many`);
      }
    }
  }
  return out;
}

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("")
    .trim();
}

function sender(client, sessionId) {
  return (update) => client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function say(send, text) {
  await send({ sessionUpdate: "agent_message_chunk", messageId: randomUUID(), content: { type: "text", text } });
}

async function ask(client, kind, params) {
  try {
    const response = await client.request(acp.methods.client.elicitation.create, params);
    record(kind, response);
    return response;
  } catch (error) {
    record(`${kind}_error`, String(error));
    return { action: "error", message: String(error) };
  }
}

async function formTurn(client, sessionId, send) {
  const response = await ask(client, "form_answer", {
    sessionId,
    mode: "form",
    message: "Fill in the deployment",
    requestedSchema: FORM,
  });
  const found = response.action === "accept" ? problems(FORM, response.content ?? {}) : [];
  await say(send, `answer: ${JSON.stringify(response)}\ncheck: ${found.length ? found.join("; ") : "ok"}`);
}

async function urlTurn(client, sessionId, send) {
  const response = await ask(client, "url_answer", {
    sessionId,
    mode: "url",
    message: "Sign in to continue",
    elicitationId: "el-1",
    url: "https://login.example.org/device?code=XYZ",
  });
  if (response.action === "accept") {
    await client.notify(acp.methods.client.elicitation.complete, { elicitationId: "el-1" });
  }
  await say(send, `answer: ${JSON.stringify(response)}`);
}

async function cancelAskTurn(client, sessionId, send) {
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c-wait", title: "Wait", kind: "other", status: "in_progress" });
  await say(send, "waiting for session/cancel");
  await new Promise((resolve) => cancelled.set(sessionId, resolve));
  await ask(client, "late_question", {
    sessionId,
    mode: "form",
    message: "Asked after the cancel",
    requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
  });
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c-wait", status: "failed" });
  await send({ sessionUpdate: "state_update", state: "idle", stopReason: "cancelled" });
}

const idle = (background) => ({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn", background });

async function backgroundTurn(send) {
  const t1 = { type: "terminal", terminalId: "t1" };
  await send({ sessionUpdate: "terminal_update", terminalId: "t1", command: "tail -f build.log", cwd: workdir, capabilities: { cancel: {} } });
  await send({ sessionUpdate: "terminal_output_chunk", terminalId: "t1", data: Buffer.from("building\r\n").toString("base64") });
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c1", title: "Index the repository", kind: "search", status: "in_progress", capabilities: { cancel: {} } });
  await say(send, "started t1 and c1 in the background");
  await send(idle([t1, { type: "tool_call", toolCallId: "c1" }]));
  await trigger("step2");
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed" });
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c2", title: "Watch the tests", kind: "other", status: "in_progress" });
  await send(idle([t1, { type: "tool_call", toolCallId: "c2" }]));
  await new Promise((resolve) => stopped.set("t1", resolve));
  await send({ sessionUpdate: "terminal_update", terminalId: "t1", exitStatus: { signal: "SIGTERM" } });
  await send(idle([{ type: "tool_call", toolCallId: "c2" }]));
  await trigger("finish");
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c2", status: "completed" });
  await send(idle([]));
}

async function afterIdleTurn(client, sessionId, send) {
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c9", title: "Deploy in the background", kind: "execute", status: "in_progress", capabilities: { cancel: {} } });
  await say(send, "deploying in the background");
  await send(idle([{ type: "tool_call", toolCallId: "c9" }]));
  await trigger("ask");
  try {
    const response = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      title: "Push the release?",
      subject: { type: "tool_call", toolCall: { toolCallId: "c9" } },
      options: [
        { optionId: "yes", name: "Allow once", kind: "allow_once" },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ],
    });
    record("late_permission", response);
  } catch (error) {
    record("late_permission_error", String(error));
  }
  await ask(client, "late_answer", {
    sessionId,
    toolCallId: "c9",
    mode: "form",
    message: "Which channel?",
    requestedSchema: { type: "object", properties: { channel: { type: "string", title: "Channel" } }, required: ["channel"] },
  });
  await send({ sessionUpdate: "tool_call_update", toolCallId: "c9", status: "completed" });
  await send(idle([]));
}

async function turn(client, sessionId, userMessageId, prompt) {
  const send = sender(client, sessionId);
  await send({ sessionUpdate: "user_message", messageId: userMessageId, content: prompt });
  await send({ sessionUpdate: "state_update", state: "running" });
  const scenario = textOf(prompt).split(/\s+/)[0];
  if (scenario === "form") await formTurn(client, sessionId, send);
  else if (scenario === "url") await urlTurn(client, sessionId, send);
  else if (scenario === "cancel-ask") return cancelAskTurn(client, sessionId, send);
  else if (scenario === "background") return backgroundTurn(send);
  else if (scenario === "after-idle") return afterIdleTurn(client, sessionId, send);
  else await say(send, `unknown scenario ${JSON.stringify(scenario)}`);
  await send({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

acp
  .agent({ name: "sdk-scenarios" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    record("initialize", params);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "sdk-scenarios", title: "SDK scenarios", version: "2.4.0" },
      capabilities: { session: {} },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    record("session/new", params);
    return { sessionId: "sess-" + randomUUID() };
  })
  .onRequest(acp.methods.agent.session.close, ({ params }) => {
    record("session/close", params);
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, ({ params, client }) => {
    record("session/prompt", params);
    const userMessageId = randomUUID();
    turn(client, params.sessionId, userMessageId, params.prompt).catch((error) => {
      record("turn_failed", String(error));
      process.stderr.write(`turn failed: ${error}\n`);
    });
    return { messageId: userMessageId };
  })
  .onRequest(acp.methods.agent.terminal.cancel, ({ params }) => {
    record("terminal/cancel", params);
    stopped.get(params.terminalId)?.();
    return {};
  })
  .onRequest(acp.methods.agent.toolCall.cancel, ({ params }) => {
    record("tool_call/cancel", params);
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    record("session/cancel", params);
    cancelled.get(params.sessionId)?.();
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
