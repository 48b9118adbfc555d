/**
 * The official TypeScript SDK of pixgw: one API for Pix charges across Brazilian PSPs.
 *
 * ```ts
 * import { Pixgw } from "@pixgw/sdk";
 * const pixgw = new Pixgw({ apiKey: process.env.PIXGW_API_KEY, baseUrl: process.env.PIXGW_URL });
 * const charge = await pixgw.charges.create({ amount: 1990, provider: "efi" });
 * ```
 */

export { Pixgw, Charges, PaymentLinks, Credentials, WebhookEndpoints, Events, Statement, Webhooks } from "./client.js";
export { VERSION, parseRetryAfter } from "./http.js";
export type { ClientOptions, RequestOptions, Environment } from "./http.js";
export { Page, PageRequest } from "./pagination.js";
export type { ListResponse } from "./pagination.js";
export { Webhook, verifyWebhook } from "./webhooks.js";
export type { WebhookHeaders, WebhookOptions } from "./webhooks.js";
export {
  PixgwError,
  InvalidRequestError,
  AuthenticationError,
  PermissionError,
  IdempotencyError,
  RateLimitError,
  PspError,
  ApiError,
  PixgwConnectionError,
  PixgwTimeoutError,
  WebhookVerificationError,
} from "./errors.js";
export type { ApiErrorBody } from "./errors.js";
export type * from "./types.js";
export type { components, paths } from "./generated/openapi.js";
