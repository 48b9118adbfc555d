//! The sandbox holds: a hostile adapter is stopped at its deadline, its memory limit, its egress
//! allow-list, or its own panic — while a healthy adapter called at the same time is unaffected.

use crate::common;

use std::time::Duration;

use common::*;
use pixgw::runtime::{CallError, ChargeStatus, Limits, PluginFault, PspError};

const DEADLINE: Duration = Duration::from_millis(500);
const MEMORY: usize = 32 << 20;

fn limits() -> Limits {
    Limits {
        memory_bytes: MEMORY,
        call_deadline: DEADLINE,
        max_concurrent_calls: 32,
    }
}

async fn create_with(
    rt: &TestRuntime,
    behaviour: &str,
) -> Result<pixgw::runtime::Charge, CallError> {
    let adapter = rt.runtime.adapter("hostile").unwrap();
    let cred = adapter.prepare(&credential("hostile-cred", &[("behaviour", behaviour)]));
    adapter
        .create_charge(&cred, "req-1", &charge_request(100))
        .await
}

fn fault(result: Result<pixgw::runtime::Charge, CallError>) -> PluginFault {
    match result {
        Err(CallError::Fault {
            provider, fault, ..
        }) => {
            assert_eq!(provider, "hostile");
            fault
        }
        other => panic!("expected a plugin fault, got {other:?}"),
    }
}

#[tokio::test]
async fn an_endless_loop_is_interrupted_at_its_deadline() {
    let rt = runtime_with(&["hostile"], limits(), None).await;
    assert_eq!(
        fault(create_with(&rt, "loop").await),
        PluginFault::Deadline(DEADLINE)
    );
}

#[tokio::test]
async fn unbounded_allocation_hits_the_memory_limit() {
    let rt = runtime_with(&["hostile"], limits(), None).await;
    assert_eq!(
        fault(create_with(&rt, "alloc").await),
        PluginFault::MemoryLimit(MEMORY)
    );
}

#[tokio::test]
async fn a_panic_becomes_a_plugin_fault() {
    let rt = runtime_with(&["hostile"], limits(), None).await;
    assert_eq!(fault(create_with(&rt, "panic").await), PluginFault::Panic);
}

#[tokio::test]
async fn calling_outside_the_endpoints_is_denied() {
    let rt = runtime_with(&["hostile"], limits(), None).await;
    match create_with(&rt, "egress").await {
        Err(CallError::Psp {
            error: PspError::Rejected(detail),
            ..
        }) => assert_eq!(
            detail.message,
            r#"Err(HttpError::Denied("egress denied: https://example.com:443 is not one of this adapter's endpoints"))"#
        ),
        other => panic!("expected the host's denial, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_adapter_is_unaffected_while_hostile_ones_misbehave() {
    let rt = runtime_with(&["hostile"], limits(), None).await;
    let rt = &rt;
    let hostile = futures::future::join_all(
        ["loop", "alloc", "panic", "egress", "loop", "alloc"]
            .map(|b| async move { create_with(rt, b).await }),
    );
    let healthy = async {
        let mut answered = 0;
        for _ in 0..50 {
            let charge = create_with(rt, "ok")
                .await
                .expect("the healthy call must succeed");
            assert_eq!(
                (charge.psp_id.as_str(), charge.status),
                ("hostile-ok", ChargeStatus::Pending)
            );
            answered += 1;
            tokio::task::yield_now().await;
        }
        answered
    };
    let (hostile, answered) = tokio::join!(hostile, healthy);
    assert_eq!(answered, 50);
    assert!(hostile.iter().all(|r| r.is_err()), "{hostile:?}");
    // And the host keeps serving afterwards.
    assert!(create_with(rt, "ok").await.is_ok());
}
