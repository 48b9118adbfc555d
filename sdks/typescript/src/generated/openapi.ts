// Generated from the gateway's OpenAPI document (GET /v1/openapi.json) by
// `npm run generate-types`. Do not edit: regenerate; `npm run check-types` fails when it is stale.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process answers (liveness). */
        get: operations["get_healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics: requests by route and status, PSP call latency by provider and
         *     operation, charges created by provider and status.
         */
        get: operations["get_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The database answers and at least one adapter is loaded (readiness). */
        get: operations["get_readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/adapters": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The adapters this gateway serves: version, load errors, and each one's manifest (credential
         *     fields, required payer fields, endpoints).
         */
        get: operations["list_adapters"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List charges, newest first, with cursor pagination. */
        get: operations["list_charges"];
        put?: never;
        /** Create a Pix charge at a PSP. */
        post: operations["create_charge"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a charge. */
        get: operations["get_charge"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel a charge that can still be paid. */
        post: operations["cancel_charge"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges/{id}/evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a charge's evidence, oldest first. */
        get: operations["list_evidence"];
        put?: never;
        /** Attach a photo and the place of the sale to a paid charge. */
        post: operations["attach_evidence"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges/{id}/evidence/{evidence_id}/photo": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The stored photo (a JPEG). */
        get: operations["get_evidence_photo"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/charges/{id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follow a charge's status live (server-sent events): an `status` event with the current
         *     status at once, then one at every change; the stream ends after a final status.
         */
        get: operations["stream_charge"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/credentials": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The merchant's credentials in this environment, in routing order. */
        get: operations["list_credentials"];
        put?: never;
        /** Connect an account at a PSP. */
        post: operations["create_credential"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/credentials/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a credential, with its webhook URL and token. */
        get: operations["get_credential"];
        put?: never;
        post?: never;
        /** Remove a credential: no new charge uses it; its charges keep their history. */
        delete: operations["delete_credential"];
        options?: never;
        head?: never;
        /**
         * Change a credential's label, order, active flag or fields (omitted fields keep their value).
         *     New fields are tried at the PSP first, as on create, unless `verify` is false.
         */
        patch: operations["update_credential"];
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List events, newest first. */
        get: operations["list_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve an event with its deliveries and every attempt (status, latency, response excerpt). */
        get: operations["get_event"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{id}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Deliver an event again to every enabled endpoint subscribed to its type. */
        post: operations["redeliver_event"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The OpenAPI document. */
        get: operations["get_openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/payment_links": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List payment links, newest first, with cursor pagination. */
        get: operations["list_payment_links"];
        put?: never;
        /** Create a payment link. */
        post: operations["create_payment_link"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/payment_links/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a payment link. */
        get: operations["get_payment_link"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Change a payment link. Charges already made keep the name they were made with. */
        patch: operations["update_payment_link"];
        trace?: never;
    };
    "/v1/payment_links/{id}/deactivate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Deactivate a payment link: its page says so and creates no charge. Charges already made
         *     can still be paid. `PATCH` with `active: true` activates it again.
         */
        post: operations["deactivate_payment_link"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/statement": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the paid charges by payment time, newest first, with the totals of the filter. */
        get: operations["list_statement"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/statement.csv": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the statement as CSV: every line of the filter, oldest payment first.
         * @description Made for the spreadsheets used in Brazil: UTF-8 with a byte-order mark, `;` between fields
         *     (the comma is the decimal mark there), amounts as `1234,56`, times as `DD/MM/AAAA HH:MM:SS`
         *     in São Paulo, CRLF line ends, fields quoted per RFC 4180. The columns: payment time, amount,
         *     PSP (its name), operator (a member's name, `API`, or payment link), payment link name,
         *     description, charge id, end-to-end id; the header row is in Portuguese unless
         *     `Accept-Language` prefers English. A text field starting with `=`, `+`, `-` or `@` is
         *     written with a leading `'` so spreadsheets show it rather than run it. Streamed: a year of
         *     lines starts at once and never waits for the whole file.
         */
        get: operations["download_statement"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The plan, its limits and this month's usage. */
        get: operations["get_usage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhook_endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The merchant's webhook endpoints in this environment. */
        get: operations["list_webhook_endpoints"];
        put?: never;
        /** Create a webhook endpoint; the answer shows its signing secret once. */
        post: operations["create_webhook_endpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhook_endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a webhook endpoint (without its secret). */
        get: operations["get_webhook_endpoint"];
        put?: never;
        post?: never;
        /** Delete an endpoint; its pending deliveries are canceled. */
        delete: operations["delete_webhook_endpoint"];
        options?: never;
        head?: never;
        /** Change an endpoint's URL, events, description, or enable it again (`status: "enabled"`). */
        patch: operations["update_webhook_endpoint"];
        trace?: never;
    };
    "/v1/webhook_endpoints/{id}/rotate_secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replace the signing secret. The old one keeps signing (both signatures are sent) for
         *     `overlap_seconds` (default 86400, at most a week), so receivers can switch without loss.
         */
        post: operations["rotate_webhook_secret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description The adapters list of the API. */
        AdapterList: {
            data: components["schemas"]["AdapterView"][];
            /** @description Always `list`. */
            object: string;
        };
        /**
         * @description One adapter the runtime knows: the version serving (if any), the last refused file, and its
         *     manifest.
         */
        AdapterView: {
            id: string;
            /** @description Why the latest file for this id was refused (the previous version keeps serving). */
            last_error?: string | null;
            last_error_at?: string | null;
            manifest?: null | components["schemas"]["ManifestView"];
            /** @description SHA-256 of the component serving now. */
            serving_sha256?: string | null;
            serving_since?: string | null;
            serving_tier?: null | components["schemas"]["Tier"];
        };
        /** @description `POST` body (documentation of what [`read_upload`] accepts). */
        AttachEvidenceRequest: {
            /**
             * Format: double
             * @description Metres, as the device reports it; only with `latitude` and `longitude`.
             */
            accuracy?: number | null;
            /** @description Up to 300 characters, instead of or beside the coordinates. */
            address?: string | null;
            /**
             * Format: double
             * @description Degrees, -90 to 90; with `longitude`.
             */
            latitude?: number | null;
            /**
             * Format: double
             * @description Degrees, -180 to 180; with `latitude`.
             */
            longitude?: number | null;
            /**
             * Format: binary
             * @description A JPEG, PNG or WebP photo of at most 10 MB. It is decoded to check it is one, turned
             *     upright, scaled to at most 2048 pixels a side and stored as a JPEG without metadata.
             *     An empty file part is no photo (what a form's empty file input sends): 400.
             */
            photo: string;
        };
        AttemptObject: {
            at: string;
            /** Format: int64 */
            attempt: number;
            error?: string | null;
            /** Format: int64 */
            latency_ms?: number | null;
            response_excerpt?: string | null;
            /**
             * Format: int64
             * @description The endpoint's HTTP status; `null` when it could not be reached.
             */
            status_code?: number | null;
        };
        /** @description A page of charges, newest first. */
        ChargeList: {
            data: components["schemas"]["ChargeObject"][];
            /** @description Whether more charges follow: pass the last id as `starting_after`. */
            has_more: boolean;
            /** @description Always `list`. */
            object: string;
        };
        /** @description A charge. */
        ChargeObject: {
            /**
             * Format: int64
             * @description Centavos.
             */
            amount: number;
            /** @description Set when the PSP reported a payment of another amount than the charge's. */
            amount_mismatch: boolean;
            /**
             * Format: int64
             * @description What the payer paid, in centavos, as the PSP reported it.
             */
            amount_paid?: number | null;
            created_at: string;
            /** @description Always `BRL`. */
            currency: string;
            description?: string | null;
            end_to_end_id?: string | null;
            /** @description `chg_…`; ids sort by creation time. */
            id: string;
            /** @description `true` for live keys' charges. */
            livemode: boolean;
            metadata: unknown;
            /** @description Always `charge`. */
            object: string;
            paid_at?: string | null;
            /**
             * @description `true` when the payment arrived after the gateway had told you the charge was `expired`
             *     or `canceled` (the PSP still accepted it): the charge is now `paid` and `charge.paid`
             *     (or `charge.underpaid`) was sent. The money is in your PSP account; refund it there if
             *     the order was abandoned.
             */
            paid_late: boolean;
            payer?: null | components["schemas"]["PayerSchema"];
            payment_link?: null | components["schemas"]["ChargePaymentLink"];
            pix: components["schemas"]["PixData"];
            /** @description The PSP that holds the charge. */
            provider: string;
            /** @description The PSP's own id for the charge. */
            psp_id?: string | null;
            /** @description The gateway-chosen reference sent to the PSP (its txid, idempotency key or correlation id). */
            reference: string;
            /** @description For `provider: "random"`: `{mode: "round_robin", selected_provider, attempted_providers}`. */
            routing?: Record<string, never> | null;
            status: components["schemas"]["ChargeStatus"];
            /**
             * @description `true` when the charge is `paid` but `amount_paid` is less than `amount`: the payer paid
             *     only part. Such a payment is announced by the event `charge.underpaid`, never
             *     `charge.paid`; do not treat it as settled (ask for the rest, or refund at the PSP).
             */
            underpaid: boolean;
        };
        /** @description The payment link a charge came from. */
        ChargePaymentLink: {
            /** @description `plink_…`. */
            id: string;
            /** @description The link's name when the charge was made (what the payer saw). */
            name: string;
        };
        /**
         * @description Where a charge stands. `processing`: the PSP reported a payment the gateway is confirming.
         * @enum {string}
         */
        ChargeStatus: "pending" | "processing" | "paid" | "expired" | "canceled" | "failed";
        /**
         * @description The payer of a new charge. Some PSPs require some of these fields (`GET /v1/adapters`:
         *     `required_payer_fields`).
         */
        CreateChargePayer: {
            /**
             * @description CPF (11 digits) or CNPJ (14 characters: 12 letters or digits, then 2 digits) with valid
             *     check digits; `.`, `-`, `/` and spaces are removed first.
             * @example 529.982.247-25
             */
            document?: string | null;
            /**
             * @description One `@`, a domain of two labels or more, no spaces.
             * @example ana@example.com
             */
            email?: string | null;
            /** @description 1 to 200 characters, not only spaces. */
            name?: string | null;
        };
        /**
         * @description `POST /v1/charges` body: what [`parse_input`] accepts, with its limits. `null` is the same as
         *     leaving a field out; text is trimmed.
         */
        CreateChargeRequest: {
            /**
             * Format: int64
             * @description Integer centavos: 1 (R$ 0,01) to 1000000000 (R$ 10.000.000,00).
             * @example 1990
             */
            amount: number;
            /** @description Shown to the payer by most PSPs; 1 to 140 characters, not only spaces. */
            description?: string | null;
            /**
             * Format: int32
             * @description Seconds the charge can be paid: 60 to 1209600 (14 days); default 3600.
             */
            expires_in?: number | null;
            metadata?: {
                [key: string]: string;
            } | null;
            payer?: null | components["schemas"]["CreateChargePayer"];
            /**
             * @description An installed adapter id (`efi`, `stripe`, …; see `GET /v1/adapters`) for which the
             *     merchant has an active credential in the key's environment — or `random`: round robin
             *     over the merchant's PSPs that accept this payer, with failover that never makes two
             *     charges; the answer's `routing` says which PSPs were tried.
             * @example efi
             */
            provider: string;
        };
        /** @description `POST /v1/credentials` body: what [`create`] reads. `null` is the same as leaving a field out. */
        CreateCredentialRequest: {
            /** @description The adapter's `credential_fields` (`GET /v1/adapters`), each a string. */
            fields?: {
                [key: string]: string;
            } | null;
            /** @description 1 to 100 characters; default: the adapter's name. */
            label?: string | null;
            /**
             * Format: int64
             * @description Order in the round robin, lower first; default 0.
             */
            position?: number | null;
            /**
             * @description An installed adapter id (`GET /v1/adapters`).
             * @example efi
             */
            provider: string;
            /** @description Default `true`: register the webhook URL at the PSP when the adapter can. */
            register_webhook?: boolean | null;
            /**
             * Format: int64
             * @description Consecutive charges in a round robin before the turn passes on; default 1.
             */
            route_limit?: number | null;
            /** @description Default `true`: try the credential at the PSP when the adapter can. */
            verify?: boolean | null;
        };
        /**
         * @description `POST /v1/webhook_endpoints` body: what [`create`] reads. `null` is the same as leaving a
         *     field out.
         */
        CreateEndpointRequest: {
            description?: string | null;
            /** @description Default: every type but `charge.created`. */
            events?: components["schemas"]["EventType"][] | null;
            /**
             * Format: uri
             * @description Where events are POSTed: an http or https URL. Live endpoints need https; a host that
             *     does not resolve, or resolves to a loopback or private address, is refused (422) unless
             *     the operator allows private addresses.
             * @example https://example.com/pix/events
             */
            url: string;
        };
        /**
         * @description `POST /v1/payment_links` body: what [`create`] reads. `null` is the same as leaving a field
         *     out; text is trimmed.
         */
        CreatePaymentLinkRequest: {
            /** @description Default `true`. */
            active?: boolean | null;
            /**
             * Format: int64
             * @description A fixed amount in centavos. Omit it to let the payer type the amount (then
             *     `min_amount` and `max_amount` may bound it; with `amount` they are refused).
             * @example 5990
             */
            amount?: number | null;
            /**
             * Format: int64
             * @description Only without `amount`: the most the payer may pay, in centavos.
             */
            max_amount?: number | null;
            /**
             * Format: int64
             * @description Only without `amount`: the least the payer may pay, in centavos; at most `max_amount`.
             */
            min_amount?: number | null;
            name: string;
            /**
             * @description An installed adapter id (`GET /v1/adapters`) or `random` (the default): round robin over
             *     the merchant's PSPs, as for charges.
             * @example random
             */
            provider?: string | null;
            /**
             * @description A custom slug: 3 to 64 letters, digits and hyphens, starting and ending with a letter or
             *     digit (stored in lower case), not taken by another link. Default: 20 random characters.
             * @example camiseta-azul
             */
            slug?: string | null;
            /**
             * Format: int64
             * @description Paid payments the link takes; then its page says it is used up.
             */
            usage_limit?: number | null;
            /**
             * Format: date-time
             * @description RFC 3339: the link takes payments from then on; before `valid_until`.
             */
            valid_from?: string | null;
            /**
             * Format: date-time
             * @description RFC 3339: the link takes no payments from then on.
             */
            valid_until?: string | null;
        };
        /** @description The merchant's credentials, in routing order. */
        CredentialList: {
            data: components["schemas"]["CredentialObject"][];
            /** @description Always `list`. */
            object: string;
        };
        /** @description A PSP credential. */
        CredentialObject: {
            /** @description Used for charges when true. */
            active: boolean;
            created_at: string;
            /** @description `test` or `live`: the environment of the key that saved it. */
            environment: string;
            /** @description The fields that are not secret, as saved. */
            fields: {
                [key: string]: string;
            };
            /** @description `cred_…`. */
            id: string;
            label: string;
            /** @description Always `credential`. */
            object: string;
            /**
             * Format: int64
             * @description Order among the merchant's credentials (lower first): the order of the round robin.
             */
            position: number;
            provider: string;
            /**
             * Format: int64
             * @description Consecutive charges this credential takes in a round robin before the turn passes on.
             */
            route_limit: number;
            /** @description Names of the secret fields that hold a value (values are never returned). */
            secret_fields_set: string[];
            updated_at: string;
            verification?: null | components["schemas"]["Verification"];
            /**
             * Format: int64
             * @description Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a
             *     change so that one made meanwhile by someone else is refused (409) instead of undone.
             */
            version: number;
            webhook: components["schemas"]["WebhookInfo"];
        };
        /** @description What a delete answers. */
        Deleted: {
            /** @description Always `true`. */
            deleted: boolean;
            id: string;
            /** @description The kind of object deleted, e.g. `credential`. */
            object: string;
        };
        /** @description One endpoint's delivery of an event. */
        DeliveryObject: {
            attempts: components["schemas"]["AttemptObject"][];
            delivered_at?: string | null;
            /** @description `we_…` */
            endpoint: string;
            id: string;
            next_attempt_at?: string | null;
            /** @description `pending`, `delivered`, `failed` or `canceled`. */
            status: string;
        };
        /** @description The merchant's webhook endpoints in the key's environment. */
        EndpointList: {
            data: components["schemas"]["EndpointObject"][];
            /** @description Always `list`. */
            object: string;
        };
        /** @description A webhook endpoint. */
        EndpointObject: {
            created_at: string;
            description?: string | null;
            /** @description Why the gateway disabled it (a 410 answer, days of failures). */
            disabled_reason?: string | null;
            /** @description The event types delivered here. */
            events: string[];
            /** @description Deliveries have failed since then. */
            failing_since?: string | null;
            /** @description `we_…`. */
            id: string;
            livemode: boolean;
            /** @description Always `webhook_endpoint`. */
            object: string;
            /** @description Until then the previous secret signs too. */
            previous_secret_expires_at?: string | null;
            /** @description Only when created or rotated: the `whsec_…` signing secret. Keep it: it is not shown again. */
            secret?: string | null;
            /** @description `enabled` or `disabled`. */
            status: string;
            url: string;
            /**
             * Format: int64
             * @description Moves on with every change; send it back (`If-Match: "<version>"` or `version`) with a
             *     change so that one made meanwhile is refused (409) instead of undone.
             */
            version: number;
        };
        /** @enum {string} */
        EndpointStatus: "enabled" | "disabled";
        /** @description The `error` object of every error response. */
        ErrorBody: {
            /** @description For `provider: "random"`: every PSP tried, in order. */
            attempted_providers?: string[] | null;
            /** @description Stable machine-readable code, e.g. `parameter_invalid`, `provider_not_connected`. */
            code: string;
            /** @description The likely remedy, in plain words. */
            hint?: string | null;
            /**
             * Format: int64
             * @description For `plan_limit_reached`: the plan's limit (`0` for a feature it lacks).
             */
            limit?: number | null;
            /** @description What went wrong and how to fix it, in plain words. */
            message: string;
            /** @description The request parameter at fault, e.g. `payer.document`. */
            param?: string | null;
            /** @description For `plan_limit_reached`: the merchant's plan (`free`, `basic`, …). */
            plan?: string | null;
            /** @description The PSP involved. */
            provider?: string | null;
            /** @description The PSP's own error code, when it gave one. */
            psp_code?: string | null;
            /** @description The PSP's own message, verbatim. */
            psp_message?: string | null;
            /** @description The id of this request (also in the `x-request-id` header): quote it to support. */
            request_id: string;
            /**
             * @description For `plan_limit_reached`: what is limited (`live_charges`, `payment_links`, …; see
             *     `GET /v1/usage`).
             */
            resource?: string | null;
            type: components["schemas"]["ErrorType"];
            /** @description For `plan_limit_reached`: the smallest plan that allows one more; absent when none does. */
            upgrade_to?: string | null;
            /**
             * Format: int64
             * @description For `plan_limit_reached`: how many the merchant has (this month, for charges).
             */
            usage?: number | null;
        };
        /** @description `{"error": …}`. */
        ErrorResponse: {
            error: components["schemas"]["ErrorBody"];
        };
        /**
         * @description The families of errors, as `error.type`.
         * @enum {string}
         */
        ErrorType: "invalid_request_error" | "authentication_error" | "permission_error" | "idempotency_error" | "rate_limit_error" | "psp_error" | "api_error";
        /** @description What an event is about. */
        EventData: {
            /** @description The charge as it was when the event happened. */
            object: components["schemas"]["ChargeObject"];
        };
        /** @description A page of events, newest first. */
        EventList: {
            data: components["schemas"]["EventObject"][];
            has_more: boolean;
            /** @description Always `list`. */
            object: string;
        };
        /** @description An event, as listed and as delivered to endpoints (the stored payload, verbatim). */
        EventObject: {
            created_at: string;
            data: components["schemas"]["EventData"];
            /** @description Only when an event is retrieved: its deliveries and every attempt. */
            deliveries?: components["schemas"]["DeliveryObject"][] | null;
            /** @description `evt_…` */
            id: string;
            livemode: boolean;
            /** @description Always `event`. */
            object: string;
            type: components["schemas"]["EventType"];
        };
        /**
         * @description An event type an endpoint can receive.
         * @enum {string}
         */
        EventType: "charge.created" | "charge.paid" | "charge.underpaid" | "charge.expired" | "charge.canceled" | "charge.failed";
        /** @description A charge's evidence, oldest first. */
        EvidenceList: {
            data: components["schemas"]["EvidenceObject"][];
            /** @description Always `list`. */
            object: string;
        };
        /** @description A photo and the place of a sale, as stored. */
        EvidenceObject: {
            /** @description `chg_…` */
            charge: string;
            /** @description When the gateway received it (its own clock, never the client's). */
            created_at: string;
            /** @description When it is deleted, with its photo: 180 days after `created_at`. */
            expires_at: string;
            /** @description `evi_…` */
            id: string;
            location?: null | components["schemas"]["LocationInfo"];
            /** @description Always `evidence`. */
            object: string;
            photo: components["schemas"]["PhotoInfo"];
            /** @description Who attached it: a member's e-mail or an API key's prefix. */
            uploaded_by: components["schemas"]["Uploader"];
        };
        FieldView: {
            help?: string | null;
            kind: string;
            label: string;
            multiline: boolean;
            name: string;
            required: boolean;
        };
        /** @description The payment link a charge was paid through. */
        LinkRef: {
            /** @description `plink_…` */
            id: string;
            /** @description The link's name when the charge was made, as the payer saw it. */
            name?: string | null;
        };
        LocationInfo: {
            /**
             * Format: double
             * @description Metres.
             */
            accuracy?: number | null;
            address?: string | null;
            /**
             * Format: double
             * @description Degrees, WGS 84.
             */
            latitude?: number | null;
            /** Format: double */
            longitude?: number | null;
        };
        ManifestView: {
            /** @description `cancel-charge`, `register-webhook`, `check-credentials`. */
            capabilities: string[];
            credential_fields: components["schemas"]["FieldView"][];
            display_name: string;
            /** @description Endpoint names (their URLs are the operator's to override). */
            endpoints: string[];
            kind: string;
            /** @description `email`, `name`, `document`. */
            required_payer_fields: string[];
            webhook_auth: components["schemas"]["WebhookAuthView"];
            wit_version: string;
        };
        Operator: {
            /** @description For `user`: the member's id (`usr_…`). */
            id?: string | null;
            /** @description For `user`: the member's name. */
            name?: string | null;
            type: components["schemas"]["OperatorType"];
        };
        /**
         * @description Who made a sale.
         * @enum {string}
         */
        OperatorType: "user" | "api" | "payment_link";
        PayerSchema: {
            /**
             * @description CPF (11 digits) or CNPJ (14 characters, alphanumeric allowed), with valid check digits;
             *     punctuation is accepted and removed.
             */
            document?: string | null;
            /** @description Required by some PSPs (the manifest's required payer fields). */
            email?: string | null;
            /** @description 1 to 200 characters. */
            name?: string | null;
        };
        /** @description A page of payment links, newest first. */
        PaymentLinkList: {
            data: components["schemas"]["PaymentLinkObject"][];
            /** @description Whether more links follow: pass the last id as `starting_after`. */
            has_more: boolean;
            /** @description Always `list`. */
            object: string;
        };
        /** @description A payment link: a public page where anyone pays the merchant by Pix. */
        PaymentLinkObject: {
            /** @description `false` once deactivated. */
            active: boolean;
            /**
             * Format: int64
             * @description A fixed amount in centavos; `null` when the payer types the amount.
             */
            amount?: number | null;
            created_at: string;
            /** @description `plink_…`. */
            id: string;
            /** @description `true` for live keys' links. */
            livemode: boolean;
            /**
             * Format: int64
             * @description For a typed amount: the most the payer may pay, in centavos.
             */
            max_amount?: number | null;
            /**
             * Format: int64
             * @description For a typed amount: the least the payer may pay, in centavos.
             */
            min_amount?: number | null;
            /** @description What the payer pays for; shown on the page and sent to the PSP as the description. */
            name: string;
            /** @description Always `payment_link`. */
            object: string;
            /**
             * Format: int64
             * @description Their total, in centavos.
             */
            paid_amount: number;
            /**
             * Format: int64
             * @description Paid payments made through the link.
             */
            paid_count: number;
            /** @description The PSP that takes the charges (an adapter id) or `random`. */
            provider: string;
            /** @description The last part of `url`. */
            slug: string;
            /**
             * @description Whether the link takes payments now: `open`, `inactive`, `scheduled` (before
             *     `valid_from`), `expired` (after `valid_until`) or `used_up` (`usage_limit` reached).
             */
            status: string;
            updated_at: string;
            /** @description The page to share: `{base_url}/p/{slug}`. */
            url: string;
            /**
             * Format: int64
             * @description How many paid payments the link takes; `null`: no limit.
             */
            usage_limit?: number | null;
            /** @description RFC 3339; before it the page says when it opens. */
            valid_from?: string | null;
            /** @description RFC 3339; from then on the page says the link expired. */
            valid_until?: string | null;
        };
        /** @description The stored photo: always a JPEG re-encoded by the gateway, without the original's metadata. */
        PhotoInfo: {
            /** @example image/jpeg */
            content_type: string;
            /** Format: int64 */
            height: number;
            /** @description Hex SHA-256 of the stored JPEG. */
            sha256: string;
            /**
             * Format: int64
             * @description Bytes of the stored JPEG.
             */
            size: number;
            /** @description `GET` it with the same API key. */
            url: string;
            /** Format: int64 */
            width: number;
        };
        /** @description The Pix data the payer uses. */
        PixData: {
            /** @description The Pix copy-and-paste code (BR Code), checked (TLV and CRC) before it is returned. */
            copy_paste?: string | null;
            /** @description RFC 3339. */
            expires_at?: string | null;
            /**
             * @description PNG of the QR code of `copy_paste`, base64 without a `data:` prefix: black on white,
             *     1 bit a pixel, 8 pixels a module, about 1 KB.
             */
            qr_code_base64?: string | null;
        };
        /** @description The merchant's plan. */
        PlanObject: {
            /**
             * @description `free`, `basic`, `pro`, `business`, `scale`, `enterprise`, `ultra`, `ultra_2`.
             * @example free
             */
            id: string;
            /**
             * Format: int32
             * @description Days notifications, webhook deliveries and PSP attempts are kept.
             */
            log_retention_days: number;
            /**
             * Format: int32
             * @description Whole reais a month; `null` for plans on request (Ultra, Ultra 2).
             */
            monthly_price_brl?: number | null;
            /** @example Free */
            name: string;
            /** @description Whether the cashier works on a phone's browser. */
            phone_cashier: boolean;
            sso: boolean;
        };
        /** @description What a redelivery queued. */
        Redelivery: {
            id: string;
            /** @description Always `event`. */
            object: string;
            /**
             * Format: int64
             * @description Deliveries queued: one per enabled endpoint subscribed to the event's type.
             */
            queued: number;
        };
        /** @description `POST /v1/webhook_endpoints/{id}/rotate_secret` body. */
        RotateSecretRequest: {
            /**
             * Format: int64
             * @description Seconds the old secret keeps signing: 0 to 604800 (a week); default 86400.
             */
            overlap_seconds?: number | null;
        };
        /** @description One paid charge. */
        StatementLineObject: {
            /**
             * Format: int64
             * @description Centavos paid (what the PSP reported, else the charge's amount).
             */
            amount: number;
            /** @description `chg_…` */
            charge_id: string;
            description?: string | null;
            /** @description The Pix end-to-end id (E2E) the central bank gave the payment. */
            end_to_end_id?: string | null;
            operator: components["schemas"]["Operator"];
            /** @description When the PSP says it was paid: RFC 3339, UTC. */
            paid_at: string;
            /**
             * @description The same moment in the merchant's time zone, RFC 3339 with its offset, e.g.
             *     `2026-11-22T21:30:05-03:00`: its date is the statement day the line belongs to.
             */
            paid_at_local: string;
            payment_link?: null | components["schemas"]["LinkRef"];
            /** @description The adapter id of the PSP that was paid. */
            provider: string;
        };
        /** @description A page of the statement, newest payment first. */
        StatementList: {
            data: components["schemas"]["StatementLineObject"][];
            /** @description Whether more lines follow: pass the last `charge_id` as `starting_after`. */
            has_more: boolean;
            /** @description Always `statement`. */
            object: string;
            /**
             * @description The zone whose days `paid_gte`, `paid_lt` and `paid_at_local` use.
             * @example America/Sao_Paulo
             */
            time_zone: string;
            totals: components["schemas"]["StatementTotals"];
        };
        /** @description Count and sum of every line the filter holds (not only this page's). */
        StatementTotals: {
            /**
             * Format: int64
             * @description Centavos.
             */
            amount: number;
            /** Format: int64 */
            count: number;
        };
        /**
         * @description Which compiler made the code an adapter version runs.
         * @enum {string}
         */
        Tier: "baseline" | "optimized";
        /** @description `PATCH /v1/credentials/{id}` body: what [`update`] reads. Omitted fields keep their value. */
        UpdateCredentialRequest: {
            /** @description `false`: no new charge uses it. */
            active?: boolean | null;
            /** @description Fields to change; the others keep their value. */
            fields?: {
                [key: string]: string;
            } | null;
            label?: string | null;
            /** Format: int64 */
            position?: number | null;
            register_webhook?: boolean | null;
            /** Format: int64 */
            route_limit?: number | null;
            /** @description Default `true`: try new fields at the PSP before saving them. */
            verify?: boolean | null;
            /**
             * Format: int64
             * @description The `version` this change is made against (or send `If-Match: "<version>"`): if the
             *     credential changed since, 409 `conflict` and nothing is saved.
             */
            version?: number | null;
        };
        /**
         * @description `PATCH /v1/webhook_endpoints/{id}` body: what [`update`] reads; omitted fields keep their
         *     value.
         */
        UpdateEndpointRequest: {
            description?: string | null;
            events?: components["schemas"]["EventType"][] | null;
            status?: null | components["schemas"]["EndpointStatus"];
            /**
             * Format: uri
             * @description As on create.
             */
            url?: string | null;
            /**
             * Format: int64
             * @description The `version` this change is made against (or send `If-Match: "<version>"`): if the
             *     endpoint changed since, 409 `conflict` and nothing is saved.
             */
            version?: number | null;
        };
        /**
         * @description `PATCH /v1/payment_links/{id}` body: what [`update`] reads. Absent fields keep their value;
         *     `null` clears an optional one.
         */
        UpdatePaymentLinkRequest: {
            /** @description `true` activates the link again; `false` deactivates it. */
            active?: boolean | null;
            /**
             * Format: int64
             * @description A number makes the amount fixed (and clears `min_amount` and `max_amount` unless given);
             *     `null` lets the payer type it.
             */
            amount?: number | null;
            /** Format: int64 */
            max_amount?: number | null;
            /** Format: int64 */
            min_amount?: number | null;
            name?: string;
            provider?: string | null;
            /** @description The old address stops working. */
            slug?: string | null;
            /** Format: int64 */
            usage_limit?: number | null;
            /** Format: date-time */
            valid_from?: string | null;
            /** Format: date-time */
            valid_until?: string | null;
        };
        Uploader: {
            id?: string | null;
            label: string;
            /** @description `user` or `api_key`. */
            type: string;
        };
        /**
         * @description What the merchant uses of each limit. Charges count this calendar month in São Paulo;
         *     payment links, PSPs, API keys and webhook endpoints count in the key's environment; the
         *     team counts members and open invitations.
         */
        UsageCounts: {
            api_keys: components["schemas"]["UsageItem"];
            live_charges: components["schemas"]["UsageItem"];
            payment_links: components["schemas"]["UsageItem"];
            psps: components["schemas"]["UsageItem"];
            team_members: components["schemas"]["UsageItem"];
            /** @description Fair use: as many as the plan's live charges, and at least 1,000. */
            test_charges: components["schemas"]["UsageItem"];
            webhook_endpoints: components["schemas"]["UsageItem"];
        };
        /** @description One limit and its use. */
        UsageItem: {
            /**
             * Format: int64
             * @description `null`: unlimited.
             */
            limit?: number | null;
            /** Format: int64 */
            used: number;
        };
        UsageObject: {
            /** @description The environment of the API key: `test` or `live`. */
            environment: string;
            /**
             * @description The month charges count in, in São Paulo: `2026-11`.
             * @example 2026-11
             */
            month: string;
            plan: components["schemas"]["PlanObject"];
            usage: components["schemas"]["UsageCounts"];
        };
        /** @description What the PSP said when the credential was tried on save. */
        Verification: {
            message?: string | null;
            /**
             * @description `ok`, `unreachable` (saved; the PSP could not be asked), `unsupported` (the adapter
             *     cannot check credentials) or `skipped` (`verify: false`).
             */
            status: string;
        };
        /** @description How the PSP's notifications authenticate. */
        WebhookAuthView: {
            /** @enum {string} */
            type: "url-token";
        } | {
            header: string;
            /** @enum {string} */
            type: "header-token";
        } | {
            /** @enum {string} */
            type: "psp-signature";
        };
        /** @description Where the PSP sends notifications for this credential. */
        WebhookInfo: {
            /** @description For PSPs configured in their dashboard to send the token in a header: its name. */
            header?: string | null;
            /**
             * @description How registering `url` at the PSP went: `{status: "registered" | "failed" | "manual" |
             *     "skipped", message?, at}`. `manual`: this PSP is configured in its own dashboard.
             */
            registration?: Record<string, never> | null;
            /** @description The token that authenticates notifications: already in `url`, unless `header` is set. */
            token: string;
            /** @description Register this URL at the PSP (adapters that can register it do so themselves). */
            url: string;
        };
    };
    responses: {
        /** @description The request does not have the documented shape: a parameter is missing or invalid (`param` names it), the body is not a JSON object, or it holds an unknown parameter (`parameter_unknown`) */
        BadRequest: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description No such object for this API key's merchant and environment (`resource_missing`) */
        NotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description The body is larger than 64 KiB (`request_too_large`) */
        PayloadTooLarge: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description Too many requests with this API key (`rate_limited`), or too many failed authentications from this address (`too_many_failed_authentications`): retry after `Retry-After` seconds */
        RateLimited: {
            headers: {
                /** @description Seconds to wait before retrying */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description No API key, or not a valid one (`api_key_missing`, `api_key_malformed`, `api_key_invalid`) */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    get_healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `ok` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": unknown;
                };
            };
        };
    };
    get_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": unknown;
                };
            };
        };
    };
    get_readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `{status: "ready", database: "ok", adapters: [...]}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `{status: "not_ready", database: "ok" | "unavailable", adapters}` saying what is missing; the database's own error goes to the log only */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    list_adapters: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AdapterList"];
                };
            };
        };
    };
    list_charges: {
        parameters: {
            query?: {
                /** @description RFC 3339: created at or after. */
                created_gte?: string;
                /** @description RFC 3339: created before. */
                created_lt?: string;
                /** @description 1 to 100; default 20. */
                limit?: number;
                /** @description An adapter id. */
                provider?: string;
                /** @description A charge id: list the charges created before it (the next page). */
                starting_after?: string;
                status?: components["schemas"]["ChargeStatus"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChargeList"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    create_charge: {
        parameters: {
            query?: never;
            header?: {
                /** @description Up to 255 characters. A replay returns the first answer (header `idempotent-replayed: true`); the same key with another body is a 422; while the first request runs, a 409. Kept at least 24 h and until the charge expires. */
                "Idempotency-Key"?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateChargeRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChargeObject"];
                };
            };
            /** @description A parameter does not have the documented shape; `param` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No valid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The plan's charges for this month are used up: `plan_limit_reached` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A request with this Idempotency-Key is still running */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over 64 KiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Well formed, and refused by a rule beyond the document: `payer.document` check digits (`parameter_invalid`), a provider not installed (`provider_unknown`) or not connected in this environment (`provider_not_connected`), a payer field the PSP requires (`parameter_missing`), no PSP for `random` (`no_eligible_provider`), or the Idempotency-Key reused with another request (`idempotency_key_reused`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
            /** @description The PSP refused or failed: `psp_message` and `hint` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The gateway's PSP calls are all busy (`gateway_busy`); nothing reached a PSP: retry after `Retry-After` with the same Idempotency-Key */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    get_charge: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `chg_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChargeObject"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    cancel_charge: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `chg_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChargeObject"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Already paid, expired, canceled or failed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The charge's PSP cannot cancel charges (`cancel_unsupported`): it expires at its expiry time */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
            /** @description The PSP refused or failed: `psp_message` and `hint` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The gateway's PSP calls are all busy (`gateway_busy`): retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    list_evidence: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `chg_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EvidenceList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    attach_evidence: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `chg_…` of a paid charge */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["AttachEvidenceRequest"];
            };
        };
        responses: {
            /** @description Attached */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EvidenceObject"];
                };
            };
            /** @description The body is not multipart/form-data, has an unknown field, or lacks `photo`; `param` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description No such charge for this key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The charge is not paid, or holds 5 items already */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The photo is over 10 MB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The file is not a JPEG, PNG or WebP image (or is damaged, or has too many pixels; `photo_invalid`), or a place field is refused: not a number in its range, a coordinate without the other, `accuracy` without coordinates, an `address` over 300 characters or with control characters (`param` names it) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_evidence_photo: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `evi_…` */
                evidence_id: string;
                /** @description `chg_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The photo */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "image/jpeg": unknown;
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    stream_charge: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `chg_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `text/event-stream`; each event is `event: status`, `data: {"id", "status"}` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": unknown;
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    list_credentials: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CredentialList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    create_credential: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateCredentialRequest"];
            };
        };
        responses: {
            201: {
                headers: {
                    /** @description The object's `version`, quoted, e.g. `"3"`: send it back as `If-Match` with a change */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CredentialObject"];
                };
            };
            /** @description The body does not have the documented shape; `param` names the parameter */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The plan's connected PSPs are used up in this environment: `plan_limit_reached` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description Well formed, and refused: no such adapter (`provider_unknown`); one of the adapter's own fields is missing or invalid (a PEM that does not parse, a certificate that does not match its key or has expired, a key for the other environment; `param` names it); or the PSP refused the credential (`psp_message` and `hint`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_credential: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `cred_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    /** @description The object's `version`, quoted, e.g. `"3"`: send it back as `If-Match` with a change */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CredentialObject"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    delete_credential: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `cred_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Deleted"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    update_credential: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `ETag` of the credential as read, e.g. `"3"`: the change is refused with 409 if it changed since */
                "If-Match"?: string;
            };
            path: {
                /** @description `cred_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["UpdateCredentialRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    /** @description The object's `version`, quoted, e.g. `"3"`: send it back as `If-Match` with a change */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CredentialObject"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The credential changed since the version named (`If-Match` or `version`): `conflict`, nothing saved */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description Well formed, and refused: one of the adapter's own fields is invalid (`param` names it), or the PSP refused the new fields (`psp_message` and `hint`); nothing was saved */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    list_events: {
        parameters: {
            query?: {
                /** @description A charge id: only its events. */
                charge?: string;
                /** @description 1 to 100; default 20. */
                limit?: number;
                /** @description An event id: the events before it (the next page). */
                starting_after?: string;
                /** @description e.g. `charge.paid`. */
                type?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_event: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `evt_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event with its `deliveries` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventObject"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    redeliver_event: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `evt_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Redelivery"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description This document (OpenAPI 3.1) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
        };
    };
    list_payment_links: {
        parameters: {
            query?: {
                /** @description 1 to 100; default 20. */
                limit?: number;
                /** @description A payment link id: list the links created before it (the next page). */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentLinkList"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    create_payment_link: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreatePaymentLinkRequest"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentLinkObject"];
                };
            };
            /** @description A parameter does not have the documented shape; `param` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The plan's active payment links are used up in this environment: `plan_limit_reached` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The slug is taken */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description Well formed, and refused by a rule across fields (`amount` together with `min_amount` or `max_amount`, `min_amount` above `max_amount`, `valid_from` not before `valid_until`), or no adapter serves `provider` (`provider_unknown`); `param` names the field */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_payment_link: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `plink_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentLinkObject"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    update_payment_link: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `plink_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["UpdatePaymentLinkRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentLinkObject"];
                };
            };
            /** @description A parameter does not have the documented shape; `param` names it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Activating it goes beyond the plan's active payment links: `plan_limit_reached` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The slug is taken */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description Well formed, and refused by a rule across fields, the link's stored ones included (`amount` together with `min_amount` or `max_amount`, `min_amount` above `max_amount`, `valid_from` not before `valid_until`), or no adapter serves `provider` (`provider_unknown`); `param` names the field */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    deactivate_payment_link: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `plink_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentLinkObject"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    list_statement: {
        parameters: {
            query?: {
                /** @description 1 to 100; default 20. */
                limit?: number;
                operator?: string;
                paid_gte?: string;
                paid_lt?: string;
                payment_link?: string;
                provider?: string;
                /** @description A line's `charge_id`: the page after it (older payments). */
                starting_after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatementList"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description `paid_lt` is before `paid_gte`, or `starting_after` is not the `charge_id` of a line of this statement */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    download_statement: {
        parameters: {
            query?: {
                operator?: string;
                paid_gte?: string;
                paid_lt?: string;
                payment_link?: string;
                provider?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The CSV file (`Content-Disposition: attachment`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/csv": string;
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description `paid_lt` is before `paid_gte` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_usage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageObject"];
                };
            };
            /** @description No valid API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    list_webhook_endpoints: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointList"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    create_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateEndpointRequest"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointObject"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The plan's webhook endpoints are used up in this environment: `plan_limit_reached` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description The `url` is well formed and refused: its host does not resolve, or resolves to a loopback, private or reserved address, it carries a user name, or it is http in live */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    get_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `we_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    /** @description The object's `version`, quoted, e.g. `"3"`: send it back as `If-Match` with a change */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointObject"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    delete_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `we_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Deleted"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    update_webhook_endpoint: {
        parameters: {
            query?: never;
            header?: {
                /** @description The `ETag` of the endpoint as read, e.g. `"3"`: the change is refused with 409 if it changed since */
                "If-Match"?: string;
            };
            path: {
                /** @description `we_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["UpdateEndpointRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    /** @description The object's `version`, quoted, e.g. `"3"`: send it back as `If-Match` with a change */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointObject"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The endpoint changed since the version named (`If-Match` or `version`): `conflict`, nothing saved */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            /** @description The `url` is well formed and refused: its host does not resolve, or resolves to a loopback, private or reserved address, it carries a user name, or it is http in live */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            429: components["responses"]["RateLimited"];
        };
    };
    rotate_webhook_secret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `we_…` */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["RotateSecretRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EndpointObject"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            429: components["responses"]["RateLimited"];
        };
    };
}
