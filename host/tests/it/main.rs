//! The gateway's integration tests, in one test binary (each binary links wasmtime and the
//! whole gateway, which dominates build time on a small machine). One module per area; most
//! start the real `pixgw` binary or a runtime over the built adapters ([`common`]), on SQLite
//! and on PostgreSQL. Run one area with `cargo test -p pixgw --test it <module>::`.

mod common;

mod adapters_e2e;
mod api_surface;
mod charge_safety;
mod charges_api;
mod conformance;
mod creating_rows;
mod dashboard;
mod delivery_leases;
mod evidence;
mod idempotency_claims;
mod integrators;
mod known_moves;
mod migrations;
mod payments;
mod plans;
mod query_plans;
mod routing;
mod runtime_asaas;
mod runtime_central_bank;
mod runtime_compile_cache;
mod runtime_efi;
mod runtime_hot_reload;
mod runtime_iugu;
mod runtime_mercadopago;
mod runtime_openpix;
mod runtime_pagbank;
mod runtime_sandbox;
mod runtime_stripe;
mod runtime_tiers;
mod safety_ops;
mod serve_binary;
mod store_durability;
mod store_idempotency;
mod store_row_cache;
mod webhook_safety;
