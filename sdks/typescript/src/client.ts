/**
 * The client: `new Pixgw({ apiKey, baseUrl })`, one property per resource of the API.
 */

import { type Call, type ClientOptions, type Environment, HttpClient, type RequestOptions } from "./http.js";
import { type ListResponse, PageRequest } from "./pagination.js";
import type {
  Charge,
  CreateChargeParams,
  CreateCredentialParams,
  CreatePaymentLinkParams,
  CreateWebhookEndpointParams,
  Credential,
  Deleted,
  ListChargesParams,
  ListEventsParams,
  ListPaymentLinksParams,
  ListStatementParams,
  PaymentLink,
  Redelivery,
  RotateWebhookSecretParams,
  StatementCsvParams,
  StatementLine,
  StatementList,
  UpdateCredentialParams,
  UpdatePaymentLinkParams,
  UpdateWebhookEndpointParams,
  Usage,
  WebhookEndpoint,
  WebhookEvent,
} from "./types.js";
import { Webhook, type WebhookHeaders, type WebhookOptions } from "./webhooks.js";

const id = (value: string) => encodeURIComponent(value);

abstract class Resource {
  constructor(protected readonly http: HttpClient) {}

  protected call<T>(call: Call, options?: RequestOptions): Promise<T> {
    return this.http.request<T>(call, options);
  }

  protected paginate<T, L extends ListResponse<T> = ListResponse<T>>(
    path: string,
    params: { starting_after?: string } & Record<string, unknown> = {},
    cursorOf: (item: T) => string,
    options?: RequestOptions,
  ): PageRequest<T, L> {
    const { starting_after, ...query } = params;
    return new PageRequest<T, L>(
      (cursor) => this.call<L>({ method: "GET", path, query: { ...query, starting_after: cursor }, retry: "safe" }, options),
      cursorOf,
      starting_after,
    );
  }
}

/** `/v1/charges`. */
export class Charges extends Resource {
  /**
   * Creates a charge. An `Idempotency-Key` is generated unless `options.idempotencyKey` is
   * given (pass your order id to make the create safe across restarts of your own process);
   * retries use the same key, so a charge is created at most once.
   */
  create(params: CreateChargeParams, options?: RequestOptions): Promise<Charge> {
    return this.call({ method: "POST", path: "/v1/charges", body: params, create: true, retry: "safe" }, options);
  }

  retrieve(chargeId: string, options?: RequestOptions): Promise<Charge> {
    return this.call({ method: "GET", path: `/v1/charges/${id(chargeId)}`, retry: "safe" }, options);
  }

  /** Newest first. `await` it for a page, or `for await` over it for every charge. */
  list(params: ListChargesParams & { starting_after?: string } = {}, options?: RequestOptions): PageRequest<Charge> {
    return this.paginate<Charge>("/v1/charges", params, (c) => c.id, options);
  }

  cancel(chargeId: string, options?: RequestOptions): Promise<Charge> {
    // Canceling twice asks for the same final state: safe to retry.
    return this.call({ method: "POST", path: `/v1/charges/${id(chargeId)}/cancel`, retry: "safe" }, options);
  }
}

/** `/v1/payment_links`. */
export class PaymentLinks extends Resource {
  create(params: CreatePaymentLinkParams, options?: RequestOptions): Promise<PaymentLink> {
    return this.call({ method: "POST", path: "/v1/payment_links", body: params, create: true, retry: "unsafe" }, options);
  }

  retrieve(linkId: string, options?: RequestOptions): Promise<PaymentLink> {
    return this.call({ method: "GET", path: `/v1/payment_links/${id(linkId)}`, retry: "safe" }, options);
  }

  list(params: ListPaymentLinksParams & { starting_after?: string } = {}, options?: RequestOptions): PageRequest<PaymentLink> {
    return this.paginate<PaymentLink>("/v1/payment_links", params, (l) => l.id, options);
  }

  update(linkId: string, params: UpdatePaymentLinkParams, options?: RequestOptions): Promise<PaymentLink> {
    return this.call({ method: "PATCH", path: `/v1/payment_links/${id(linkId)}`, body: params, retry: "safe" }, options);
  }

  deactivate(linkId: string, options?: RequestOptions): Promise<PaymentLink> {
    return this.call({ method: "POST", path: `/v1/payment_links/${id(linkId)}/deactivate`, retry: "safe" }, options);
  }
}

/** `/v1/credentials`: the merchant's accounts at PSPs. */
export class Credentials extends Resource {
  create(params: CreateCredentialParams, options?: RequestOptions): Promise<Credential> {
    return this.call({ method: "POST", path: "/v1/credentials", body: params, create: true, retry: "unsafe" }, options);
  }

  retrieve(credentialId: string, options?: RequestOptions): Promise<Credential> {
    return this.call({ method: "GET", path: `/v1/credentials/${id(credentialId)}`, retry: "safe" }, options);
  }

  /** In routing order; not paginated (a merchant has a handful). */
  async list(options?: RequestOptions): Promise<Credential[]> {
    const list = await this.call<{ data: Credential[] }>({ method: "GET", path: "/v1/credentials", retry: "safe" }, options);
    return list.data;
  }

  update(credentialId: string, params: UpdateCredentialParams, options?: RequestOptions): Promise<Credential> {
    return this.call({ method: "PATCH", path: `/v1/credentials/${id(credentialId)}`, body: params, retry: "safe" }, options);
  }

  delete(credentialId: string, options?: RequestOptions): Promise<Deleted> {
    return this.call({ method: "DELETE", path: `/v1/credentials/${id(credentialId)}`, retry: "safe" }, options);
  }
}

/** `/v1/webhook_endpoints`: where the gateway delivers signed events. */
export class WebhookEndpoints extends Resource {
  /** The answer's `secret` (`whsec_…`) is shown once: keep it to verify deliveries. */
  create(params: CreateWebhookEndpointParams, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.call({ method: "POST", path: "/v1/webhook_endpoints", body: params, create: true, retry: "unsafe" }, options);
  }

  retrieve(endpointId: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.call({ method: "GET", path: `/v1/webhook_endpoints/${id(endpointId)}`, retry: "safe" }, options);
  }

  async list(options?: RequestOptions): Promise<WebhookEndpoint[]> {
    const list = await this.call<{ data: WebhookEndpoint[] }>({ method: "GET", path: "/v1/webhook_endpoints", retry: "safe" }, options);
    return list.data;
  }

  update(endpointId: string, params: UpdateWebhookEndpointParams, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.call({ method: "PATCH", path: `/v1/webhook_endpoints/${id(endpointId)}`, body: params, retry: "safe" }, options);
  }

  delete(endpointId: string, options?: RequestOptions): Promise<Deleted> {
    return this.call({ method: "DELETE", path: `/v1/webhook_endpoints/${id(endpointId)}`, retry: "safe" }, options);
  }

  /**
   * A new secret; the old one keeps signing for `overlap_seconds` (default a day). Not retried
   * after an ambiguous failure: a second rotation would end the first one's secret.
   */
  rotateSecret(endpointId: string, params: RotateWebhookSecretParams = {} as RotateWebhookSecretParams, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.call({ method: "POST", path: `/v1/webhook_endpoints/${id(endpointId)}/rotate_secret`, body: params, retry: "unsafe" }, options);
  }
}

/** `/v1/events`: every event of the merchant's charges, with its deliveries. */
export class Events extends Resource {
  /** The event with its `deliveries` and every attempt (status, latency, response excerpt). */
  retrieve(eventId: string, options?: RequestOptions): Promise<WebhookEvent> {
    return this.call({ method: "GET", path: `/v1/events/${id(eventId)}`, retry: "safe" }, options);
  }

  /** Newest first; filter by `type` or `charge`. */
  list(params: ListEventsParams & { starting_after?: string } = {}, options?: RequestOptions): PageRequest<WebhookEvent> {
    return this.paginate<WebhookEvent>("/v1/events", params, (e) => e.id, options);
  }

  redeliver(eventId: string, options?: RequestOptions): Promise<Redelivery> {
    return this.call({ method: "POST", path: `/v1/events/${id(eventId)}/redeliver`, retry: "unsafe" }, options);
  }
}

/** `/v1/statement`: paid charges by payment time, in São Paulo days. */
export class Statement extends Resource {
  /** Lines newest payment first; each page's `response.totals` covers the whole filter. */
  list(params: ListStatementParams & { starting_after?: string } = {}, options?: RequestOptions): PageRequest<StatementLine, StatementList> {
    return this.paginate<StatementLine, StatementList>("/v1/statement", params, (l) => l.charge_id, options);
  }

  /** The statement as the CSV file Brazilian spreadsheets open (UTF-8 with BOM, `;`). */
  csv(params: StatementCsvParams = {} as StatementCsvParams, options?: RequestOptions): Promise<string> {
    return this.call({ method: "GET", path: "/v1/statement.csv", query: params as Record<string, unknown>, retry: "safe", responseType: "text" }, options);
  }
}

/** Verifying signed deliveries with the endpoint's secret(s). */
export class Webhooks {
  /** See {@link Webhook.verify}. */
  verify(payload: string | Uint8Array, headers: WebhookHeaders, secrets: string | readonly string[], options?: WebhookOptions): WebhookEvent {
    return new Webhook(secrets, options).verify(payload, headers);
  }
}

export class Pixgw {
  /** `test` or `live`, from the API key's prefix. */
  readonly environment: Environment;
  readonly baseUrl: string;
  readonly charges: Charges;
  readonly paymentLinks: PaymentLinks;
  readonly credentials: Credentials;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly events: Events;
  readonly statement: Statement;
  readonly webhooks = new Webhooks();
  private readonly http: HttpClient;

  constructor(options: ClientOptions = {}) {
    this.http = new HttpClient(options);
    this.environment = this.http.environment;
    this.baseUrl = this.http.baseUrl;
    this.charges = new Charges(this.http);
    this.paymentLinks = new PaymentLinks(this.http);
    this.credentials = new Credentials(this.http);
    this.webhookEndpoints = new WebhookEndpoints(this.http);
    this.events = new Events(this.http);
    this.statement = new Statement(this.http);
  }

  /** The merchant's plan, its limits and this month's usage. */
  usage(options?: RequestOptions): Promise<Usage> {
    return this.http.request({ method: "GET", path: "/v1/usage", retry: "safe" }, options);
  }
}
