// The SDK without a gateway: settings, the retry policy against a scripted local server, errors,
// and webhook verification (the Standard Webhooks test vector, rotation, tolerance).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import { describe, it } from "node:test";

import {
  AuthenticationError,
  InvalidRequestError,
  Pixgw,
  PixgwConnectionError,
  PixgwTimeoutError,
  PspError,
  RateLimitError,
  Webhook,
  WebhookVerificationError,
  parseRetryAfter,
  verifyWebhook,
} from "../dist/esm/index.js";

/** A server answering each request with the next scripted reply; records what it received. */
async function scripted(replies) {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() });
      const reply = replies.shift() ?? { status: 500, body: { error: { type: "api_error", code: "script_ended", message: "no reply left" } } };
      if (reply.destroy) return req.socket.destroy();
      if (reply.hang) return;
      res.writeHead(reply.status, { "content-type": "application/json", ...(reply.headers ?? {}) });
      res.end(typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => {
      server.closeAllConnections?.();
      return new Promise((r) => server.close(r));
    },
  };
}

const charge = { id: "chg_1", object: "charge", status: "pending", amount: 1990 };
const pspUnknown = {
  status: 502,
  body: {
    error: {
      type: "psp_error",
      code: "psp_outcome_unknown",
      message: "The PSP did not answer.",
      provider: "efi",
      psp_message: "upstream reset",
      hint: "Retry with the same Idempotency-Key.",
      request_id: "req_abc",
    },
  },
};

describe("client settings", () => {
  it("tells the environment by the key's prefix", () => {
    assert.equal(new Pixgw({ apiKey: "pgw_test_x", baseUrl: "http://gw" }).environment, "test");
    assert.equal(new Pixgw({ apiKey: "pgw_live_x", baseUrl: "http://gw" }).environment, "live");
  });

  it("refuses a key that is not a pixgw key, and a missing base URL, saying what to do", () => {
    assert.throws(() => new Pixgw({ apiKey: "sk_test_123", baseUrl: "http://gw" }), /starts with pgw_test_ or pgw_live_/);
    const saved = process.env.PIXGW_URL;
    delete process.env.PIXGW_URL;
    try {
      assert.throws(() => new Pixgw({ apiKey: "pgw_test_x" }), /no base URL.*PIXGW_URL/);
    } finally {
      if (saved !== undefined) process.env.PIXGW_URL = saved;
    }
    assert.throws(() => new Pixgw({ apiKey: "pgw_test_x", baseUrl: "ftp://gw" }), /http or https/);
  });
});

describe("retries", () => {
  it("retries a create after 5xx and a dropped connection with the same Idempotency-Key", async () => {
    const server = await scripted([pspUnknown, { destroy: true }, { status: 201, body: charge }]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      const created = await pixgw.charges.create({ amount: 1990, provider: "efi" });
      assert.equal(created.id, "chg_1");
      assert.equal(server.requests.length, 3);
      const keys = server.requests.map((r) => r.headers["idempotency-key"]);
      assert.match(keys[0], /^[0-9a-f-]{36}$/);
      assert.deepEqual(keys, [keys[0], keys[0], keys[0]]);
      assert.deepEqual(JSON.parse(server.requests[2].body), { amount: 1990, provider: "efi" });
      assert.equal(server.requests[0].headers.authorization, "Bearer pgw_test_k");
    } finally {
      await server.close();
    }
  });

  it("uses the caller's Idempotency-Key, and a new one per call otherwise", async () => {
    const server = await scripted([{ status: 201, body: charge }, { status: 201, body: charge }, { status: 201, body: charge }]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      await pixgw.charges.create({ amount: 1, provider: "efi" }, { idempotencyKey: "order-42" });
      await pixgw.charges.create({ amount: 1, provider: "efi" });
      await pixgw.charges.create({ amount: 1, provider: "efi" });
      const [a, b, c] = server.requests.map((r) => r.headers["idempotency-key"]);
      assert.equal(a, "order-42");
      assert.notEqual(b, c);
    } finally {
      await server.close();
    }
  });

  it("waits as long as Retry-After says on a 429", async () => {
    const server = await scripted([
      { status: 429, headers: { "retry-after": "1" }, body: { error: { type: "rate_limit_error", code: "rate_limited", message: "Slow down." } } },
      { status: 200, body: charge },
    ]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      await pixgw.charges.retrieve("chg_1");
      const [first, second] = server.requests;
      assert.ok(second.at - first.at >= 950, `retried after ${second.at - first.at} ms, before Retry-After`);
    } finally {
      await server.close();
    }
  });

  it("gives up when Retry-After is beyond maxRetryAfterMs, with a typed RateLimitError", async () => {
    const server = await scripted([
      { status: 429, headers: { "retry-after": "3600" }, body: { error: { type: "rate_limit_error", code: "rate_limited", message: "Slow down." } } },
    ]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      const error = await pixgw.charges.retrieve("chg_1").catch((e) => e);
      assert.ok(error instanceof RateLimitError);
      assert.equal(error.retryAfterSeconds, 3600);
      assert.equal(server.requests.length, 1);
    } finally {
      await server.close();
    }
  });

  it("does not retry a 4xx, nor a replayed (final) answer, nor past maxRetries", async () => {
    const invalid = { status: 400, body: { error: { type: "invalid_request_error", code: "parameter_invalid", message: "amount must be at least 1.", param: "amount", request_id: "req_1" } } };
    const replayed = { ...pspUnknown, headers: { "idempotent-replayed": "true" } };
    const server = await scripted([invalid, replayed, pspUnknown, pspUnknown]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url, maxRetries: 1 });
      const bad = await pixgw.charges.create({ amount: 0, provider: "efi" }).catch((e) => e);
      assert.ok(bad instanceof InvalidRequestError);
      assert.deepEqual([bad.status, bad.code, bad.param, bad.requestId, bad.message], [400, "parameter_invalid", "amount", "req_1", "amount must be at least 1."]);
      assert.equal(server.requests.length, 1);

      const final = await pixgw.charges.create({ amount: 1, provider: "efi" }).catch((e) => e);
      assert.ok(final instanceof PspError);
      assert.equal(server.requests.length, 2);

      const unknown = await pixgw.charges.create({ amount: 1, provider: "efi" }).catch((e) => e);
      assert.ok(unknown instanceof PspError);
      assert.deepEqual(
        [unknown.type, unknown.code, unknown.provider, unknown.pspMessage, unknown.hint, unknown.requestId],
        ["psp_error", "psp_outcome_unknown", "efi", "upstream reset", "Retry with the same Idempotency-Key.", "req_abc"],
      );
      assert.equal(server.requests.length, 4, "one retry, then the error");
    } finally {
      await server.close();
    }
  });

  it("retries a create the gateway does not deduplicate only when nothing was done (429)", async () => {
    const limited = { status: 429, headers: { "retry-after": "0" }, body: { error: { type: "rate_limit_error", code: "rate_limited", message: "Slow down." } } };
    const failed = { status: 500, body: { error: { type: "api_error", code: "internal_error", message: "boom" } } };
    const server = await scripted([limited, failed, { status: 201, body: { id: "we_1" } }]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      const error = await pixgw.webhookEndpoints.create({ url: "https://example.com/hook" }).catch((e) => e);
      assert.equal(error.code, "internal_error");
      assert.equal(server.requests.length, 2, "retried after the 429, not after the 500");
    } finally {
      await server.close();
    }
  });

  it("times out an attempt and retries it; raises PixgwTimeoutError when none answers", async () => {
    const server = await scripted([{ hang: true }, { status: 200, body: charge }, { hang: true }, { hang: true }]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url, timeoutMs: 200 });
      assert.equal((await pixgw.charges.retrieve("chg_1")).id, "chg_1");
      const error = await pixgw.charges.retrieve("chg_1", { maxRetries: 1 }).catch((e) => e);
      assert.ok(error instanceof PixgwTimeoutError, String(error));
    } finally {
      await server.close();
    }
  });

  it("describes an unreachable gateway", async () => {
    const server = await scripted([]);
    const url = server.url;
    await server.close();
    const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: url, maxRetries: 0 });
    const error = await pixgw.charges.retrieve("chg_1").catch((e) => e);
    assert.ok(error instanceof PixgwConnectionError);
    assert.match(error.message, /ECONNREFUSED.*reachable/);
  });

  it("parses Retry-After as seconds or an HTTP date", () => {
    assert.equal(parseRetryAfter("2"), 2000);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter("soon"), undefined);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const ms = parseRetryAfter(inTenSeconds);
    assert.ok(ms > 8_000 && ms <= 10_000, String(ms));
  });

  it("types an error answer that is not the API's by its status", async () => {
    const server = await scripted([{ status: 401, body: "<html>proxy login</html>" }]);
    try {
      const pixgw = new Pixgw({ apiKey: "pgw_test_k", baseUrl: server.url });
      const error = await pixgw.charges.retrieve("chg_1").catch((e) => e);
      assert.ok(error instanceof InvalidRequestError || error instanceof AuthenticationError);
      assert.equal(error.code, "http_401");
      assert.match(error.message, /proxy login/);
    } finally {
      await server.close();
    }
  });
});

describe("webhook verification", () => {
  // The test vector published with the Standard Webhooks specification.
  const vector = {
    secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  };
  const at = new Date(vector.timestamp * 1000);
  const headers = (signature = vector.signature, timestamp = vector.timestamp) => ({
    "webhook-id": vector.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature,
  });
  const reason = (fn) => {
    try {
      fn();
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError, String(e));
      return e.reason;
    }
    assert.fail("verified");
  };

  it("accepts the specification's vector (its body is not an event, so it stops there)", () => {
    assert.equal(reason(() => new Webhook(vector.secret).verify(vector.body, headers(), at)), "invalid_payload");
    assert.equal(reason(() => new Webhook("whsec_AAAA").verify(vector.body, headers(), at)), "no_matching_signature");
  });

  const secretA = "whsec_" + Buffer.alloc(32, 1).toString("base64");
  const secretB = "whsec_" + Buffer.alloc(32, 2).toString("base64");
  const event = JSON.stringify({ id: "evt_1", object: "event", type: "charge.paid", created_at: "2026-01-01T00:00:00Z", livemode: false, data: { object: charge } });
  const sign = (secret, id, ts, body) =>
    "v1," + createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(`${id}.${ts}.${body}`).digest("base64");
  const now = Math.floor(Date.now() / 1000);
  const eventHeaders = (signature, ts = now) => ({ "Webhook-Id": "evt_1", "Webhook-Timestamp": String(ts), "Webhook-Signature": signature });

  it("returns the typed event; accepts any of several secrets and any of several signatures", () => {
    const got = verifyWebhook(event, eventHeaders(sign(secretA, "evt_1", now, event)), secretA);
    assert.equal(got.type, "charge.paid");
    assert.equal(got.data.object.id, "chg_1");
    // The gateway during a rotation: new signature first, old one after.
    const both = `${sign(secretB, "evt_1", now, event)} ${sign(secretA, "evt_1", now, event)}`;
    assert.equal(new Webhook(secretA).verify(Buffer.from(event), eventHeaders(both)).id, "evt_1");
    assert.equal(new Webhook([secretB]).verify(event, new Headers(eventHeaders(both))).id, "evt_1");
    // The receiver during a rotation: either secret may sign.
    assert.equal(new Webhook([secretB, secretA]).verify(event, eventHeaders(sign(secretA, "evt_1", now, event))).id, "evt_1");
  });

  it("refuses a changed body, id or timestamp, stale and future timestamps, and missing headers", () => {
    const signature = sign(secretA, "evt_1", now, event);
    const hook = new Webhook(secretA);
    assert.equal(reason(() => hook.verify(event.replace("1990", "1"), eventHeaders(signature))), "no_matching_signature");
    assert.equal(reason(() => hook.verify(event, { ...eventHeaders(signature), "Webhook-Id": "evt_2" })), "no_matching_signature");
    assert.equal(reason(() => hook.verify(event, eventHeaders(signature, now - 1))), "no_matching_signature");
    assert.equal(reason(() => hook.verify(event, eventHeaders(sign(secretA, "evt_1", now - 360, event), now - 360))), "timestamp_too_old");
    assert.equal(reason(() => hook.verify(event, eventHeaders(sign(secretA, "evt_1", now + 360, event), now + 360))), "timestamp_too_new");
    assert.equal(reason(() => hook.verify(event, eventHeaders(signature, "soon"))), "invalid_timestamp");
    assert.equal(reason(() => hook.verify(event, { "webhook-id": "evt_1" })), "missing_header");
    assert.equal(reason(() => hook.verify(event, eventHeaders("v2," + signature.slice(3)))), "no_matching_signature");
    // A wider tolerance accepts the older one.
    const old = now - 400;
    assert.equal(new Webhook(secretA, { toleranceSeconds: 600 }).verify(event, eventHeaders(sign(secretA, "evt_1", old, event), old)).id, "evt_1");
    assert.throws(() => new Webhook("not base64!"), /whsec_ followed by base64/);
  });
});
