//! One migrations folder for both backends (`migrations/`). Databases migrated while each
//! backend had a folder of its own — those files are kept here, in
//! `fixtures/split-migrations/<backend>` — open with the `pixgw` binary, their data intact; one
//! that stopped before 0011 (plans) gets the month counters of the merged 0011, which computes
//! the month with arithmetic both backends share.

use std::path::{Path, PathBuf};

use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Row};

use crate::both_backends;
use crate::common::gateway::{Backend, TestDb, cli, cli_output};

fn split_folder(backend: Backend) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures/split-migrations")
        .join(match backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        })
}

async fn open_pool(db: &TestDb) -> AnyPool {
    pixgw::store::install_drivers();
    let url = match db.sqlite_file() {
        Some(_) => format!("{}?mode=rwc", db.url),
        None => db.url.clone(),
    };
    AnyPool::connect(&url).await.unwrap()
}

/// Migrates `db` as a gateway of before the merge did, up to `last` included.
async fn migrate_split(db: &TestDb, backend: Backend, last: i64) -> AnyPool {
    let mut old = Migrator::new(split_folder(backend)).await.unwrap();
    let kept: Vec<_> = old
        .migrations
        .iter()
        .filter(|m| m.version <= last)
        .cloned()
        .collect();
    assert!(kept.len() >= 10, "the fixtures hold the split folders");
    old.migrations = kept.into();
    let pool = open_pool(db).await;
    old.run(&pool).await.unwrap();
    pool
}

async fn checksums(pool: &AnyPool) -> Vec<(i64, Vec<u8>)> {
    sqlx::query("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// The one folder's checksums, as `pixgw` embeds them.
async fn merged_checksums() -> Vec<(i64, Vec<u8>)> {
    let merged = Migrator::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations"))
        .await
        .unwrap();
    merged
        .iter()
        .map(|m| (m.version, m.checksum.to_vec()))
        .collect()
}

async fn a_database_of_the_split_folders_opens(backend: Backend) {
    let db = TestDb::new(backend).await;
    let pool = migrate_split(&db, backend, i64::MAX).await;
    let before = checksums(&pool).await;
    assert_ne!(
        before,
        merged_checksums().await,
        "every file's text changed"
    );
    sqlx::query(
        "INSERT INTO merchants (id, name, created_at, plan) \
         VALUES ('mer_old', 'Loja de antes', 1700000000000, 'pro')",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    assert_eq!(cli(&db, &[], &["migrate"]), "database schema is up to date");
    // Its data is there, and the gateway's queries read it.
    let merchants = cli(&db, &[], &["merchant", "list"]);
    assert!(
        merchants.starts_with("mer_old  2023-11-14T22:13:20Z  pro"),
        "{merchants}"
    );
    assert!(merchants.ends_with("Loja de antes"), "{merchants}");
    // Every applied migration now carries the one folder's checksum: the next start needs no
    // adoption, and opens just the same.
    let pool = open_pool(&db).await;
    assert_eq!(checksums(&pool).await, merged_checksums().await);
    pool.close().await;
    assert_eq!(cli(&db, &[], &["migrate"]), "database schema is up to date");
}
both_backends!(a_database_of_the_split_folders_opens);

/// Only the split folders' exact checksums are adopted: a migration whose file really changed
/// still stops the start, as sqlx means it to.
async fn a_changed_migration_still_stops_the_start(backend: Backend) {
    let db = TestDb::new(backend).await;
    let pool = migrate_split(&db, backend, i64::MAX).await;
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 3")
        .bind(vec![7u8; 48])
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let out = cli_output(&db, &[], &["migrate"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("migration 3 was previously applied but has been modified"),
        "{stderr}"
    );
}
both_backends!(a_changed_migration_still_stops_the_start);

/// A database left at 0010 gets 0011 from the one folder: its charges are counted in their
/// month in São Paulo (UTC−3), on either backend.
async fn a_database_before_plans_counts_its_charges_by_month(backend: Backend) {
    let db = TestDb::new(backend).await;
    let pool = migrate_split(&db, backend, 10).await;
    for statement in [
        "INSERT INTO merchants (id, name, created_at) VALUES ('mer_a', 'A', 0)",
        "INSERT INTO credentials (id, merchant_id, environment, provider, label, public_fields, \
         sealed_fields, webhook_id, webhook_token_sealed, created_at, updated_at) \
         VALUES ('cred_a', 'mer_a', 'test', 'efi', 'efi', '{}', '{}', 'wh_a', 'x', 0, 0)",
    ] {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    // 2024-03-01T00:00 in São Paulo is 03:00 UTC; 2025-01-01 likewise.
    let created = [
        ("a", 1_709_261_999_999_i64),
        ("b", 1_709_262_000_000),
        ("c", 1_709_262_000_001),
        ("d", 1_735_700_399_999),
        ("e", 1_735_700_400_000),
    ];
    for (reference, at) in created {
        sqlx::query(
            "INSERT INTO charges (id, merchant_id, environment, credential_id, provider, \
             reference, status, amount, created_at, updated_at) \
             VALUES ($1, 'mer_a', 'test', 'cred_a', 'efi', $2, 'paid', 100, $3, $3)",
        )
        .bind(format!("chg_{reference}"))
        .bind(format!("ref{reference}"))
        .bind(at)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    assert_eq!(cli(&db, &[], &["migrate"]), "database schema is up to date");
    let pool = open_pool(&db).await;
    let usage: Vec<(String, i64)> = sqlx::query(
        "SELECT month, charges FROM plan_usage WHERE merchant_id = 'mer_a' ORDER BY month",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect();
    assert_eq!(
        usage,
        [
            ("2024-02".to_owned(), 1),
            ("2024-03".to_owned(), 2),
            ("2024-12".to_owned(), 1),
            ("2025-01".to_owned(), 1)
        ]
    );
    assert_eq!(checksums(&pool).await, merged_checksums().await);
}
both_backends!(a_database_before_plans_counts_its_charges_by_month);
