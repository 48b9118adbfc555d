//! The conformance suite (`pixgw plugins conformance`) run for every adapter of this repository
//! against its own simulated PSP: one table of lifecycle steps instead of a copy per PSP.
//! PSP-specific behaviour stays in each `runtime_<psp>.rs`.

use crate::common;

use pixgw::adapter_tools::conformance::{self, Outcome};

async fn conforms(id: &str) {
    let sim = common::start_sim().await;
    let steps = conformance::run(&conformance::Options {
        file: common::built_adapter(id),
        sim: sim.control_url(),
        as_provider: id.into(),
        compile_cache_dir: Some(common::target_dir().join("test-compile-cache")),
    })
    .await
    .unwrap();
    let table = conformance::render(&steps);
    assert!(!steps.iter().any(|s| s.failed()), "{id}:\n{table}");
    // The steps every adapter must pass, whatever its capabilities.
    for name in [
        "create",
        "create again: same charge",
        "query: pending",
        "paid at the PSP",
        "query: paid",
        "unknown charge: not-found",
    ] {
        let step = steps.iter().find(|s| s.name == name).unwrap();
        assert!(
            matches!(step.outcome, Outcome::Passed(_)),
            "{id}: {name}\n{table}"
        );
    }
    // The central-bank adapters hold the account's Pix key: one that is not the account's is
    // refused for the reason `pix-key`, through the SDK's reading of the central bank's errors.
    let central_bank = [
        "efi",
        "inter",
        "sicredi",
        "bb",
        "itau",
        "santander",
        "bradesco",
    ];
    let key_step = steps.iter().find(|s| s.name == "wrong Pix key refused");
    assert_eq!(
        key_step.is_some_and(|s| matches!(s.outcome, Outcome::Passed(_))),
        central_bank.contains(&id),
        "{id}\n{table}"
    );
}

macro_rules! conformance {
    ($($id:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread")]
        async fn $id() {
            conforms(stringify!($id)).await;
        }
    )*};
}

conformance!(
    efi,
    inter,
    sicredi,
    bb,
    itau,
    santander,
    bradesco,
    stripe,
    mercadopago,
    pagbank,
    openpix,
    iugu,
    asaas
);
