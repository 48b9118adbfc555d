/**
 * Verifying the gateway's events, signed per the Standard Webhooks specification:
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
 * keyed with the bytes of the endpoint's `whsec_<base64>` secret. During a secret rotation the
 * gateway sends one signature per secret, space-separated; a receiver given several secrets
 * accepts a signature by any of them.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

import { WebhookVerificationError } from "./errors.js";
import type { WebhookEvent } from "./types.js";

/** Headers as Node's `req.headers` gives them, a Fetch `Headers`, or a plain object. */
export type WebhookHeaders =
  | Headers
  | Record<string, string | string[] | undefined>;

export interface WebhookOptions {
  /** How far the `webhook-timestamp` may be from now, in seconds. Default 300 (5 minutes). */
  toleranceSeconds?: number;
}

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export class Webhook {
  private readonly keys: Buffer[];
  private readonly toleranceSeconds: number;

  /**
   * @param secrets the endpoint's `whsec_…` secret, or several during a rotation (the new one
   *   and the old one until its overlap ends).
   */
  constructor(secrets: string | readonly string[], options: WebhookOptions = {}) {
    const list = typeof secrets === "string" ? [secrets] : [...secrets];
    if (list.length === 0) throw new TypeError("pixgw: Webhook needs at least one whsec_… secret.");
    this.keys = list.map(secretKey);
    this.toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  }

  /**
   * Checks the signature and timestamp of one delivery and returns its event.
   *
   * @param payload the raw body, exactly as received (parse it only afterwards: re-serialised
   *   JSON does not match the signature).
   * @param now the current time; for tests.
   * @throws WebhookVerificationError when anything does not check out.
   */
  verify(payload: string | Uint8Array, headers: WebhookHeaders, now: Date = new Date()): WebhookEvent {
    const id = header(headers, "webhook-id");
    const timestamp = header(headers, "webhook-timestamp");
    const signatures = header(headers, "webhook-signature");
    if (!/^\d+$/.test(timestamp)) {
      throw new WebhookVerificationError("invalid_timestamp", `webhook-timestamp ${JSON.stringify(timestamp)} is not Unix seconds.`);
    }
    const skew = Math.floor(now.getTime() / 1000) - Number(timestamp);
    if (skew > this.toleranceSeconds) {
      throw new WebhookVerificationError("timestamp_too_old", `The webhook was signed ${skew} s ago, beyond the ${this.toleranceSeconds} s tolerance: a replay, or a clock off.`);
    }
    if (-skew > this.toleranceSeconds) {
      throw new WebhookVerificationError("timestamp_too_new", `The webhook is signed ${-skew} s in the future, beyond the ${this.toleranceSeconds} s tolerance: check this machine's clock.`);
    }
    const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
    const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), body]);
    const expected = this.keys.map((key) => createHmac("sha256", key).update(signed).digest());
    const matched = signatures.split(" ").some((entry) => {
      const [version, value] = entry.split(",", 2);
      if (version !== "v1" || value === undefined) return false;
      const given = Buffer.from(value, "base64");
      return expected.some((e) => e.length === given.length && timingSafeEqual(e, given));
    });
    if (!matched) {
      throw new WebhookVerificationError("no_matching_signature", "No webhook-signature matches this endpoint's secret(s): check the secret, and that the raw body is passed unchanged.");
    }
    let event: WebhookEvent;
    try {
      event = JSON.parse(body.toString("utf8")) as WebhookEvent;
    } catch {
      throw new WebhookVerificationError("invalid_payload", "The signed body is not JSON.");
    }
    if (typeof event !== "object" || event === null || typeof event.type !== "string" || typeof event.id !== "string") {
      throw new WebhookVerificationError("invalid_payload", "The signed body is not a pixgw event ({id, type, data}).");
    }
    return event;
  }
}

/** One-call form of {@link Webhook.verify}. */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | readonly string[],
  options: WebhookOptions & { now?: Date } = {},
): WebhookEvent {
  return new Webhook(secrets, options).verify(payload, headers, options.now);
}

/** The HMAC key of a `whsec_<base64>` secret. */
function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (encoded === "" || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    throw new TypeError("pixgw: a webhook secret is whsec_ followed by base64, as the endpoint's `secret` shows it.");
  }
  return Buffer.from(encoded, "base64");
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | string[] | null | undefined;
  if (typeof (headers as Headers).get === "function") {
    value = (headers as Headers).get(name);
  } else {
    const record = headers as Record<string, string | string[] | undefined>;
    value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  }
  if (Array.isArray(value)) value = value.join(" ");
  if (value === null || value === undefined || value === "") {
    throw new WebhookVerificationError("missing_header", `The ${name} header is missing: is this a pixgw webhook?`);
  }
  return value;
}
