//! The schema's migrations: one folder, `migrations/`, for both backends, embedded in the
//! binary; and the adoption of databases migrated while each backend had a folder of its own.
//!
//! sqlx records the checksum (SHA-384) of every migration it applied and refuses to start when
//! a file's checksum changed. Merging `migrations/sqlite` and `migrations/postgres` changed
//! every file's text (their comments named each other; 0010 and 0011 were written twice), not
//! what it does to a database already at that version. So before migrating,
//! [`adopt_split_folders`] replaces, version by version, a stored checksum that is exactly the
//! old file's of this backend with the one folder's. Any other checksum is left alone: a
//! migration that really changed still stops the start, as sqlx means it to.

use sqlx::AnyPool;
use sqlx::migrate::Migrator;

use super::{Backend, StoreError};

/// Every migration, for both backends.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// Version, then the SHA-384 (hex) of that migration's file in `migrations/sqlite` and in
/// `migrations/postgres`, the folders before the merge. Fixed: those files are gone.
const SPLIT_FOLDERS: &[(i64, &str, &str)] = &include!("split_folders.in");

/// Rewrites the checksums the split folders left in this database to the one folder's; returns
/// how many. Safe to run at once from several gateways: each update is conditional on the old
/// value.
pub async fn adopt_split_folders(pool: &AnyPool, backend: Backend) -> Result<u64, StoreError> {
    let table = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
        }
    };
    let tables: i64 = sqlx::query_scalar(table).fetch_one(pool).await?;
    if tables == 0 {
        // A new database: nothing was migrated yet.
        return Ok(0);
    }
    let mut adopted = 0;
    for &(version, sqlite, postgres) in SPLIT_FOLDERS {
        let Some(now) = MIGRATOR.iter().find(|m| m.version == version) else {
            continue;
        };
        let before = match backend {
            Backend::Sqlite => sqlite,
            Backend::Postgres => postgres,
        };
        let before = hex::decode(before).expect("the split folders' checksums are hex");
        let done = sqlx::query(
            "UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3",
        )
        .bind(now.checksum.to_vec())
        .bind(version)
        .bind(before)
        .execute(pool)
        .await?;
        adopted += done.rows_affected();
    }
    if adopted > 0 {
        tracing::info!(
            migrations = adopted,
            "migrations applied from the former per-backend folders adopted by the one folder"
        );
    }
    Ok(adopted)
}
