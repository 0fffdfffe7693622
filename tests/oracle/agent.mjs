// A small ACP v2 agent built on the reference TypeScript SDK (pinned in package.json).
// It is an independent oracle: the SDK parses every request, notification and response
// our client sends with its own zod validators, and rejects what does not conform.
// Everything it accepted is appended as JSON lines to the file named by ORACLE_LOG,
// so the Python test can assert what the SDK saw.
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const logPath = process.env.ORACLE_LOG;
function record(kind, value) {
  if (logPath) appendFileSync(logPath, JSON.stringify({ kind, value }) + "\n");
}

const cancelled = new Set();

function textOf(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
}

async function turn(client, sessionId, userMessageId, prompt) {
  const send = (update) => client.notify(acp.methods.client.session.update, { sessionId, update });
  await send({ sessionUpdate: "user_message", messageId: userMessageId, content: prompt });
  await send({ sessionUpdate: "state_update", state: "running" });
  const replyId = randomUUID();
  const text = textOf(prompt);
  await send({ sessionUpdate: "agent_message_chunk", messageId: replyId, content: { type: "text", text: "oracle heard: " } });
  await send({ sessionUpdate: "agent_message_chunk", messageId: replyId, content: { type: "text", text } });
  if (text.startsWith("run ")) {
    const command = text.slice(4);
    const toolCallId = "tc-" + randomUUID();
    const terminalId = "term-" + randomUUID();
    await send({
      sessionUpdate: "tool_call_update",
      toolCallId,
      title: command,
      kind: "execute",
      status: "pending",
      content: [{ type: "terminal", terminalId }],
    });
    await send({ sessionUpdate: "state_update", state: "requires_action" });
    let response;
    try {
      response = await client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        title: `Run \`${command}\`?`,
        subject: { type: "command", command, cwd: process.cwd(), toolCallId, terminalId },
        options: [
          { optionId: "yes", name: "Allow once", kind: "allow_once" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      });
      record("permission_response", response);
    } catch (error) {
      record("permission_error", String(error));
      response = { outcome: { outcome: "cancelled" } };
    }
    const allowed = response.outcome.outcome === "selected" && response.outcome.optionId === "yes";
    if (response.outcome.outcome === "cancelled") {
      // A client that cancels sends `session/cancel` before answering "cancelled", but the
      // SDK resolves responses at once while notifications pass through async handlers:
      // let the queued notification handlers run before deciding how the turn ends.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (cancelled.has(sessionId)) {
      await send({ sessionUpdate: "tool_call_update", toolCallId, status: "cancelled" });
      await send({ sessionUpdate: "state_update", state: "idle", stopReason: "cancelled" });
      return;
    }
    await send({ sessionUpdate: "state_update", state: "running" });
    if (allowed) {
      await send({ sessionUpdate: "terminal_update", terminalId, command, cwd: process.cwd(), size: { cols: 80, rows: 24 } });
      await send({ sessionUpdate: "terminal_output_chunk", terminalId, data: Buffer.from("\x1b[32mpretend output\x1b[0m\r\n").toString("base64") });
      await send({ sessionUpdate: "terminal_update", terminalId, exitStatus: { exitCode: 0 } });
      await send({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
    } else {
      await send({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    }
  }
  await send({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

acp
  .agent({ name: "sdk-oracle" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    record("initialize", params);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "sdk-oracle", title: "SDK oracle", version: "2.4.0" },
      capabilities: { session: {} },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    record("session/new", params);
    return { sessionId: "sess-" + randomUUID() };
  })
  .onRequest(acp.methods.agent.session.list, ({ params }) => {
    record("session/list", params);
    return { sessions: [] };
  })
  .onRequest(acp.methods.agent.session.close, ({ params }) => {
    record("session/close", params);
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, ({ params, client }) => {
    record("session/prompt", params);
    cancelled.delete(params.sessionId);
    const userMessageId = randomUUID();
    turn(client, params.sessionId, userMessageId, params.prompt).catch((error) => {
      process.stderr.write(`turn failed: ${error}\n`);
    });
    return { messageId: userMessageId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    record("session/cancel", params);
    cancelled.add(params.sessionId);
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
