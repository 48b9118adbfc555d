/**
 * One request to the gateway, with the SDK's retry policy: network errors, 429 and 5xx are
 * retried with exponential backoff and jitter (or after `Retry-After` when the gateway sends it),
 * always with the same `Idempotency-Key`, so a retried create can never make a second charge.
 */

import { randomUUID } from "node:crypto";

import {
  PixgwConnectionError,
  PixgwError,
  PixgwTimeoutError,
  errorFromResponse,
} from "./errors.js";

export const VERSION = "0.1.0";

export type Environment = "test" | "live";

export interface ClientOptions {
  /** `pgw_test_…` or `pgw_live_…`. Default: the `PIXGW_API_KEY` environment variable. */
  apiKey?: string;
  /** The gateway, e.g. `https://pix.example.com`. Default: the `PIXGW_URL` environment variable. */
  baseUrl?: string;
  /** How long one attempt may take, in milliseconds. Default 60 000 (a PSP call may take 45 s). */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /** The longest `Retry-After` the client waits for before giving up, in ms. Default 60 000. */
  maxRetryAfterMs?: number;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double). */
  fetch?: typeof fetch;
}

/** Per-call options. */
export interface RequestOptions {
  /** For creates: the key that makes a retry safe. Default: a new UUID per call. */
  idempotencyKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

/**
 * Whether a request may be sent again after an answer that might mean it was carried out:
 * `safe` for reads, deletes, updates and creates the gateway deduplicates by key; `unsafe` for
 * the rest, which are retried only when the gateway certainly did nothing (429, connection refused).
 */
export type RetryPolicy = "safe" | "unsafe";

export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  /** A create: gets an `Idempotency-Key`. */
  create?: boolean;
  retry: RetryPolicy;
  /** `text` for CSV; JSON otherwise. */
  responseType?: "json" | "text";
}

const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;

export class HttpClient {
  readonly apiKey: string;
  readonly baseUrl: string;
  readonly environment: Environment;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxRetryAfterMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const env = typeof process === "undefined" ? {} : process.env;
    const apiKey = options.apiKey ?? env.PIXGW_API_KEY;
    if (!apiKey) {
      throw new TypeError("pixgw: no API key. Pass { apiKey: \"pgw_test_…\" } or set PIXGW_API_KEY.");
    }
    if (apiKey.startsWith("pgw_test_")) {
      this.environment = "test";
    } else if (apiKey.startsWith("pgw_live_")) {
      this.environment = "live";
    } else {
      throw new TypeError(
        "pixgw: an API key starts with pgw_test_ or pgw_live_; this one does not. Copy it from the dashboard's API keys page.",
      );
    }
    const baseUrl = options.baseUrl ?? env.PIXGW_URL;
    if (!baseUrl) {
      throw new TypeError("pixgw: no base URL. Pass { baseUrl: \"https://pix.example.com\" } or set PIXGW_URL.");
    }
    let parsed: URL;
    try {
      parsed = new URL(baseUrl);
    } catch {
      throw new TypeError(`pixgw: the base URL ${JSON.stringify(baseUrl)} is not a URL; use e.g. https://pix.example.com.`);
    }
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
      throw new TypeError(`pixgw: the base URL must be http or https, not ${parsed.protocol}`);
    }
    this.apiKey = apiKey;
    this.baseUrl = parsed.href.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== "function") {
      throw new TypeError("pixgw: this runtime has no fetch; use Node 18 or later, or pass { fetch }.");
    }
    this.fetchImpl = fetchImpl;
  }

  async request<T>(call: Call, options: RequestOptions = {}): Promise<T> {
    const url = new URL(this.baseUrl + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.apiKey}`,
      accept: call.responseType === "text" ? "text/csv, application/json" : "application/json",
      "user-agent": `pixgw-typescript/${VERSION}`,
    };
    let body: string | undefined;
    if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.body);
    }
    if (call.create) {
      // Generated once per call, before the first attempt: every retry carries the same key.
      headers["idempotency-key"] = options.idempotencyKey ?? randomUUID();
    }
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < maxRetries;
      let response: Response;
      let text: string;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), timeoutMs);
      const onAbort = () => timeout.abort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const init: RequestInit = { method: call.method, headers, signal: timeout.signal };
        if (body !== undefined) init.body = body;
        response = await this.fetchImpl(url, init);
        // Decoded by hand to keep a byte-order mark: the statement's CSV starts with one so
        // that Excel reads it as UTF-8 (Response.text() would drop it).
        text = utf8.decode(await response.arrayBuffer());
      } catch (cause) {
        if (options.signal?.aborted) throw cause;
        const timedOut = timeout.signal.aborted;
        const error = timedOut
          ? new PixgwTimeoutError(`pixgw: ${call.method} ${call.path} got no answer within ${timeoutMs} ms.`, { cause })
          : new PixgwConnectionError(
              `pixgw: ${call.method} ${call.path} failed before an answer arrived (${describe(cause)}). Is ${this.baseUrl} reachable?`,
              { cause },
            );
        // A refused connection never reached the gateway: safe to repeat whatever it was.
        if (retriesLeft && (call.retry === "safe" || connectionRefused(cause))) {
          await sleep(backoff(attempt), options.signal);
          continue;
        }
        throw error;
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
      }

      if (response.ok) {
        if (call.responseType === "text") return text as T;
        return (text === "" ? undefined : JSON.parse(text)) as T;
      }
      const error = errorFromResponse(response.status, text, response.headers);
      const delay = retriesLeft ? this.retryDelay(call, error, attempt) : undefined;
      if (delay === undefined) throw error;
      await sleep(delay, options.signal);
    }
  }

  /** How long to wait before retrying after `error`, or `undefined` when it must not be retried. */
  private retryDelay(call: Call, error: PixgwError, attempt: number): number | undefined {
    const retryable =
      // Rate limited: the gateway refused before doing anything.
      error.status === 429 ||
      // The first request with this key is still running: its answer comes on a retry.
      (error.status === 409 && error.code === "idempotency_key_in_use") ||
      // The gateway or the PSP failed; a stored (replayed) answer is final and would come back.
      (error.status >= 500 && call.retry === "safe" && error.headers.get("idempotent-replayed") !== "true");
    if (!retryable) return undefined;
    const retryAfter = parseRetryAfter(error.headers.get("retry-after"));
    if (retryAfter === undefined) return backoff(attempt);
    return retryAfter <= this.maxRetryAfterMs ? retryAfter : undefined;
  }
}

/** Exponential backoff with jitter: 0.5 s, 1 s, 2 s … up to 8 s, each between half and all of it. */
function backoff(attempt: number): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** `Retry-After` in seconds or as an HTTP date, in milliseconds from now. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function connectionRefused(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } } | undefined)?.cause?.code;
  return code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN";
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
