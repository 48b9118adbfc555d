/**
 * The SDK's errors. Every answer of the API that is not a success becomes a {@link PixgwError}
 * subclass chosen by the API's `error.type`, carrying the API's fields as they came; a request
 * that got no answer becomes a {@link PixgwConnectionError}.
 */

/** The API's `error` object, as the gateway sends it. */
export interface ApiErrorBody {
  type: string;
  code: string;
  message: string;
  param?: string;
  provider?: string;
  psp_message?: string;
  psp_code?: string;
  hint?: string;
  request_id?: string;
  [extra: string]: unknown;
}

/** An error answer of the API (any status from 400 up). */
export class PixgwError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** The API's `error.type`, e.g. `invalid_request_error`, `psp_error`. */
  readonly type: string;
  /** The API's stable `error.code`, e.g. `parameter_invalid`, `psp_outcome_unknown`. */
  readonly code: string;
  /** The request parameter at fault, e.g. `payer.document`. */
  readonly param: string | undefined;
  /** What usually fixes it, in plain words. */
  readonly hint: string | undefined;
  /** The id of the request (quote it to support); also in the `x-request-id` header. */
  readonly requestId: string | undefined;
  /** The PSP involved, for PSP errors. */
  readonly provider: string | undefined;
  /** The PSP's own message, verbatim. */
  readonly pspMessage: string | undefined;
  /** The PSP's own error code, when it gave one. */
  readonly pspCode: string | undefined;
  /** The whole `error` object, with any field this SDK version does not name. */
  readonly body: ApiErrorBody;
  /** The response headers. */
  readonly headers: Headers;

  constructor(status: number, body: ApiErrorBody, headers: Headers) {
    super(body.message);
    this.name = new.target.name;
    this.status = status;
    this.type = body.type;
    this.code = body.code;
    this.param = body.param;
    this.hint = body.hint;
    this.requestId = body.request_id ?? headers.get("x-request-id") ?? undefined;
    this.provider = body.provider;
    this.pspMessage = body.psp_message;
    this.pspCode = body.psp_code;
    this.body = body;
    this.headers = headers;
  }
}

/** 400, 404, 413, 422: the request is malformed or names something that does not exist. */
export class InvalidRequestError extends PixgwError {}
/** 401: no valid API key. */
export class AuthenticationError extends PixgwError {}
/** 403: the key may not do this, or the plan does not allow it (`plan_limit_reached`). */
export class PermissionError extends PixgwError {}
/** 409, 422: an `Idempotency-Key` still in use, or reused with another request. */
export class IdempotencyError extends PixgwError {}
/** 429: too many requests; {@link retryAfterSeconds} says when to try again. */
export class RateLimitError extends PixgwError {
  get retryAfterSeconds(): number | undefined {
    const value = this.headers.get("retry-after");
    const seconds = value === null ? NaN : Number(value);
    return Number.isFinite(seconds) ? seconds : undefined;
  }
}
/** 502: the PSP refused or failed; {@link pspMessage} is its own words, {@link hint} the remedy. */
export class PspError extends PixgwError {}
/** 500, 503: something failed inside the gateway. */
export class ApiError extends PixgwError {}

const byType: Record<string, typeof PixgwError> = {
  invalid_request_error: InvalidRequestError,
  authentication_error: AuthenticationError,
  permission_error: PermissionError,
  idempotency_error: IdempotencyError,
  rate_limit_error: RateLimitError,
  psp_error: PspError,
  api_error: ApiError,
};

/** The error for an answer: its class from `error.type`, or from the status when the body is not the API's. */
export function errorFromResponse(status: number, text: string, headers: Headers): PixgwError {
  let body: ApiErrorBody | undefined;
  try {
    const parsed = JSON.parse(text) as { error?: ApiErrorBody };
    if (parsed && typeof parsed.error === "object" && typeof parsed.error.message === "string") {
      body = parsed.error;
    }
  } catch {
    // Not JSON: a proxy's page, for instance. Described below from the status.
  }
  if (!body) {
    const type = status === 429 ? "rate_limit_error" : status >= 500 ? "api_error" : "invalid_request_error";
    const excerpt = text.trim().slice(0, 200);
    body = {
      type,
      code: `http_${status}`,
      message: `The server answered HTTP ${status} without a pixgw error body${excerpt ? `: ${excerpt}` : ""}. Check the base URL points at a pixgw gateway.`,
    };
  }
  const Class = byType[body.type] ?? PixgwError;
  return new Class(status, body, headers);
}

/** The request got no answer: the gateway was unreachable, the connection broke, or it timed out. */
export class PixgwConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No answer within the client's timeout. */
export class PixgwTimeoutError extends PixgwConnectionError {}

/** A webhook whose signature, timestamp or body does not check out: answer it 400 and ignore it. */
export class WebhookVerificationError extends Error {
  /** Why, as a stable code. */
  readonly reason:
    | "missing_header"
    | "invalid_timestamp"
    | "timestamp_too_old"
    | "timestamp_too_new"
    | "no_matching_signature"
    | "invalid_payload";

  constructor(reason: WebhookVerificationError["reason"], message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}
