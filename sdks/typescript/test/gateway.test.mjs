// The SDK against a real gateway and PSP simulator (see support.mjs for which): charges through
// efi and `random` paid at the simulator with their signed webhooks verified, pagination,
// retry-with-the-same-key against an injected fault, typed errors, secret rotation, and the
// README's quick start run as written.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { AuthenticationError, InvalidRequestError, Pixgw, PspError, Webhook } from "../dist/esm/index.js";
import { eventually, simulator, startGateway, webhookReceiver } from "./support.mjs";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
// A CPF with valid check digits: every PSP of `random` takes it (some require one).
const payer = { name: "Maria Silva", email: "maria@example.com", document: "529.982.247-25" };

let gw;
let pixgw;
let sim;
let receiver;
let endpoint;

before(async () => {
  gw = await startGateway();
  pixgw = new Pixgw({ apiKey: gw.apiKey, baseUrl: gw.url });
  sim = simulator(gw.simUrl);
  receiver = await webhookReceiver();
  endpoint = await pixgw.webhookEndpoints.create({
    url: receiver.url,
    events: ["charge.created", "charge.paid", "charge.canceled"],
    description: "typescript sdk suite",
  });
});

after(async () => {
  if (endpoint) await pixgw.webhookEndpoints.delete(endpoint.id).catch(() => {});
  await receiver?.close();
  await gw?.stop();
});

/** The first delivery of `type` for `chargeId`, verified with `secrets`. */
async function delivered(type, chargeId, secrets = endpoint.secret) {
  const hook = new Webhook(secrets);
  return eventually(`${type} for ${chargeId}`, () => {
    for (const d of receiver.deliveries) {
      const event = hook.verify(d.body, d.headers);
      if (event.type === type && event.data.object.id === chargeId) return { event, delivery: d };
    }
    return undefined;
  });
}

describe("charges", () => {
  it("creates an efi charge, pays it at the simulator and verifies the signed charge.paid", async () => {
    assert.equal(pixgw.environment, "test");
    const charge = await pixgw.charges.create({ amount: 1990, provider: "efi", description: "SDK efi", metadata: { order: "ts-1" } });
    assert.equal(charge.status, "pending");
    assert.equal(charge.provider, "efi");
    assert.equal(charge.amount, 1990);
    assert.match(charge.pix.copy_paste, /^000201/);
    assert.deepEqual(charge.metadata, { order: "ts-1" });
    assert.equal((await pixgw.charges.retrieve(charge.id)).id, charge.id);

    await sim.pay("efi", charge.reference);
    const { event, delivery } = await delivered("charge.paid", charge.id);
    assert.equal(event.id, delivery.headers["webhook-id"]);
    assert.equal(event.livemode, false);
    assert.equal(event.data.object.status, "paid");
    assert.equal(event.data.object.amount_paid, 1990);
    assert.equal((await pixgw.charges.retrieve(charge.id)).status, "paid");

    // The statement holds it once paid, as a line and in the CSV.
    const statement = await pixgw.statement.list({ provider: "efi", limit: 100 });
    assert.ok(statement.data.some((l) => l.charge_id === charge.id));
    assert.ok(statement.response.totals.count >= 1);
    const csv = await pixgw.statement.csv({ provider: "efi" });
    assert.ok(csv.startsWith("\ufeff"), "the byte-order mark Excel needs is kept");
    assert.ok(csv.includes(charge.id));
  });

  it("creates a charge with provider random, pays it at the PSP chosen and verifies charge.paid", async () => {
    const charge = await pixgw.charges.create({ amount: 2500, provider: "random", payer });
    assert.equal(charge.routing.mode, "round_robin");
    assert.equal(charge.routing.selected_provider, charge.provider);
    await sim.pay(charge.provider, charge.reference);
    const { event } = await delivered("charge.paid", charge.id);
    assert.equal(event.data.object.provider, charge.provider);
    assert.equal(event.data.object.status, "paid");
  });

  it("cancels a charge", async () => {
    const charge = await pixgw.charges.create({ amount: 700, provider: "efi" });
    const canceled = await pixgw.charges.cancel(charge.id);
    assert.equal(canceled.status, "canceled");
    const { event } = await delivered("charge.canceled", charge.id);
    assert.equal(event.data.object.status, "canceled");
  });

  it("lists newest first, one page or every page through the iterator", async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await pixgw.charges.create({ amount: 100 + i, provider: "efi" })).id);

    const page = await pixgw.charges.list({ limit: 2, created_gte: since });
    assert.equal(page.data.length, 2);
    assert.equal(page.hasMore, true);
    const second = await page.nextPage();
    assert.equal(second.data.length, 2);
    assert.ok(second.data.every((c) => !page.data.some((d) => d.id === c.id)));

    const seen = [];
    for await (const c of pixgw.charges.list({ limit: 2, created_gte: since })) seen.push(c.id);
    assert.equal(new Set(seen).size, seen.length, "no charge twice");
    const ours = seen.filter((id) => made.includes(id));
    assert.deepEqual(ours, [...made].reverse(), "all five, newest first");

    const events = await pixgw.events.list({ charge: made[0], limit: 1 }).toArray();
    assert.deepEqual(events.map((e) => e.type), ["charge.created"]);
  });
});

describe("retries against an injected fault", () => {
  it("retries a create whose PSP reply was lost with the same key: one charge at the PSP", async () => {
    const before = (await sim.charges("efi")).length;
    await sim.faults({ provider: "efi", drop_reply_after_create: 1 });
    const charge = await pixgw.charges.create({ amount: 4321, provider: "efi" });
    assert.equal(charge.status, "pending");
    const atPsp = await sim.charges("efi");
    assert.equal(atPsp.length, before + 1, "a retry with another key would have made a second charge");
  });

  it("without retries, the typed PSP error says what to do; the same key then finds the charge", async () => {
    const before = (await sim.charges("efi")).length;
    await sim.faults({ provider: "efi", drop_reply_after_create: 1 });
    const key = `ts-lost-${Date.now()}`;
    const error = await pixgw.charges.create({ amount: 4322, provider: "efi" }, { idempotencyKey: key, maxRetries: 0 }).catch((e) => e);
    assert.ok(error instanceof PspError, String(error));
    assert.equal(error.status, 502);
    assert.equal(error.type, "psp_error");
    assert.equal(error.code, "psp_outcome_unknown");
    assert.match(error.hint, /same Idempotency-Key/);
    assert.match(error.requestId, /^req_/);
    const charge = await pixgw.charges.create({ amount: 4322, provider: "efi" }, { idempotencyKey: key });
    assert.equal(charge.amount, 4322);
    assert.equal((await sim.charges("efi")).length, before + 1);
  });
});

describe("errors", () => {
  it("a parameter error names the parameter and the request", async () => {
    const error = await pixgw.charges.create({ amount: 0, provider: "efi" }).catch((e) => e);
    assert.ok(error instanceof InvalidRequestError, String(error));
    assert.deepEqual([error.status, error.type, error.code, error.param], [400, "invalid_request_error", "parameter_invalid", "amount"]);
    assert.match(error.requestId, /^req_/);
    assert.ok(error.message.length > 0);
  });

  it("an unknown key is an AuthenticationError", async () => {
    const stranger = new Pixgw({ apiKey: "pgw_test_unknownunknownunknown", baseUrl: gw.url });
    const error = await stranger.charges.list().catch((e) => e);
    assert.ok(error instanceof AuthenticationError, String(error));
    assert.equal(error.status, 401);
  });

  it("a missing charge is a 404 resource_missing", async () => {
    const error = await pixgw.charges.retrieve("chg_doesnotexist").catch((e) => e);
    assert.deepEqual([error.status, error.code], [404, "resource_missing"]);
  });
});

describe("webhook endpoints", () => {
  it("rotating a secret signs with both; a receiver with either secret verifies", async () => {
    const rotating = await webhookReceiver();
    try {
      const created = await pixgw.webhookEndpoints.create({ url: rotating.url, events: ["charge.created"] });
      assert.match(created.secret, /^whsec_/);
      assert.ok((await pixgw.webhookEndpoints.list()).some((e) => e.id === created.id));
      const rotated = await pixgw.webhookEndpoints.rotateSecret(created.id, { overlap_seconds: 3600 });
      assert.notEqual(rotated.secret, created.secret);
      const charge = await pixgw.charges.create({ amount: 555, provider: "efi" });
      const delivery = await eventually("charge.created after rotation", () =>
        rotating.deliveries.find((d) => JSON.parse(d.body).data.object.id === charge.id),
      );
      assert.equal(delivery.headers["webhook-signature"].split(" ").length, 2);
      for (const secrets of [created.secret, rotated.secret, [rotated.secret, created.secret]]) {
        assert.equal(new Webhook(secrets).verify(delivery.body, delivery.headers).data.object.id, charge.id);
      }
      await pixgw.webhookEndpoints.delete(created.id);
    } finally {
      await rotating.close();
    }
  });
});

describe("credentials and usage", () => {
  it("lists the demo's credentials and the plan's usage", async () => {
    const credentials = await pixgw.credentials.list();
    const efi = credentials.find((c) => c.provider === "efi");
    assert.ok(efi, "the demo connects efi");
    assert.equal((await pixgw.credentials.retrieve(efi.id)).id, efi.id);
    const usage = await pixgw.usage();
    assert.equal(typeof usage.plan, "object");
  });
});

describe("packaging", () => {
  const run = promisify(execFile);
  const env = () => ({ ...process.env, PIXGW_URL: gw.url, PIXGW_API_KEY: gw.apiKey });

  it("the README's quick start runs as written", async () => {
    const readme = readFileSync(join(packageDir, "README.md"), "utf8");
    const quickStart = readme.split("## Quick start")[1]?.match(/```js\n([\s\S]*?)```/)?.[1];
    assert.ok(quickStart, "README has a ```js block under ## Quick start");
    // Inside the package, `@pixgw/sdk` resolves to the package itself (self-reference).
    const dir = mkdtempSync(join(packageDir, ".quickstart-"));
    try {
      const file = join(dir, "quickstart.mjs");
      writeFileSync(file, quickStart);
      const { stdout } = await run(process.execPath, [file], { env: env(), cwd: packageDir });
      assert.match(stdout, /chg_\w+ pending/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("require() loads the CommonJS build", async () => {
    const script = "const { Pixgw, PspError } = require('@pixgw/sdk'); const p = new Pixgw(); p.charges.list({ limit: 1 }).then((page) => console.log(typeof PspError, page.data.length));";
    const { stdout } = await run(process.execPath, ["-e", script], { env: env(), cwd: packageDir });
    assert.equal(stdout.trim(), "function 1");
  });
});
