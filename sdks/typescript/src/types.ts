/**
 * The API's objects and parameters, named for SDK users, all taken from the types generated from
 * the gateway's OpenAPI document (`src/generated/openapi.ts`, `npm run generate-types`).
 */

import type { components, paths } from "./generated/openapi.js";

type Schemas = components["schemas"];
type JsonBody<Op> = Op extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type Query<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
/** List parameters without the cursor, which the iterator manages (pass it to start elsewhere). */
type ListQuery<Op> = Omit<Query<Op>, "limit"> & { limit?: number };

export type Charge = Schemas["ChargeObject"];
export type ChargeStatus = Schemas["ChargeStatus"];
export type CreateChargeParams = Schemas["CreateChargeRequest"];
export type ListChargesParams = ListQuery<paths["/v1/charges"]["get"]>;

export type PaymentLink = Schemas["PaymentLinkObject"];
export type CreatePaymentLinkParams = Schemas["CreatePaymentLinkRequest"];
export type UpdatePaymentLinkParams = Schemas["UpdatePaymentLinkRequest"];
export type ListPaymentLinksParams = ListQuery<paths["/v1/payment_links"]["get"]>;

export type Credential = Schemas["CredentialObject"];
export type CreateCredentialParams = JsonBody<paths["/v1/credentials"]["post"]>;
export type UpdateCredentialParams = JsonBody<paths["/v1/credentials/{id}"]["patch"]>;

export type WebhookEndpoint = Schemas["EndpointObject"];
export type CreateWebhookEndpointParams = JsonBody<paths["/v1/webhook_endpoints"]["post"]>;
export type UpdateWebhookEndpointParams = JsonBody<paths["/v1/webhook_endpoints/{id}"]["patch"]>;
export type RotateWebhookSecretParams = JsonBody<paths["/v1/webhook_endpoints/{id}/rotate_secret"]["post"]>;

export type ListEventsParams = ListQuery<paths["/v1/events"]["get"]>;

export type StatementLine = Schemas["StatementLineObject"];
export type StatementList = Schemas["StatementList"];
export type ListStatementParams = ListQuery<paths["/v1/statement"]["get"]>;
export type StatementCsvParams = Query<paths["/v1/statement.csv"]["get"]>;

export type Usage = Schemas["UsageObject"];
export type ApiErrorResponse = Schemas["ErrorResponse"];

/** The types of the events the gateway sends. */
export type EventType = Schemas["EventType"];
/** An event, as delivered to webhook endpoints and listed by `GET /v1/events`. */
export type WebhookEvent = Schemas["EventObject"];
/** What a delete answers. */
export type Deleted = Schemas["Deleted"];
/** What a redelivery queued. */
export type Redelivery = Schemas["Redelivery"];
