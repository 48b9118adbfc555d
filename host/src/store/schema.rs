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
const SPLIT_FOLDERS: &[(i64, &str, &str)] = &[
    // 0001_charges_api.sql
    (
        1,
        "6bb68623c91a0632153d15fb28aa1b62f1622fa4d756daddaec00e4a627640eddd64bb01816239f2e72054b220394e3f",
        "0c22ca15356b1c3b06c93074cd89b78c60875d394f9b8d1ebe4db75af23f7d33c345b8cc33a8a3181957d92570bcae3d",
    ),
    // 0002_payment_confirmation.sql
    (
        2,
        "246b8f3d80888686f4661b4c10ce4d0a2e8193b2f5195c021080af5938f020f2227f5c4d8e2a12d745cc135587c94cb2",
        "3973a06141cb51fb483f33a635e712db2f917ac7a08d5832ac7424ac056e71e585ce4672be0f1c930bba32f5d63265c7",
    ),
    // 0003_routing.sql
    (
        3,
        "36f3bb74117dec4930af2cd2be451cc740f9a6b0056cbcc1ff842f741189087524665f42b440cf1644729cc36d233abe",
        "41db65314136218754115821678f6bf61a3b3ebfa850bda245114a4e63b12c76aaa570ed03decc9b30c740b056b5e710",
    ),
    // 0004_adapter_cache.sql
    (
        4,
        "2f2bb81d5c5abd1e9d2a3f0a706f4350687bf63ca2d4dc9e8cacada6dff8f48095eba56843af4998e4266eb4ff24c05a",
        "a15cfd4a9794597cbdc69b7a4980833a05fa7390d9f8a4ac0fbb82e552c43d5476c55ece9d0f33d497670fbde8c02ea4",
    ),
    // 0005_dashboard.sql
    (
        5,
        "fa31c0136bc6afc3e0a8b898abbec611db842e4b69adb88f20a4eb09534fc80c2996c0935351eabc385643c2f9e5f650",
        "8ede2caccf83c1d3d0f61e168d737f7621892d3c344979ae237d6583f8a4e03e4afea3e4e5b015f48ba89d2373ff5e52",
    ),
    // 0006_charge_operator.sql
    (
        6,
        "b6454c342a46af46e839135be6e0d845549de4c5b76331e1bf4a42bb9cd441a0a58e53f32505a23cb729e69fd69663b6",
        "21e224a1ffa396891c32b1cb70271cb944bddc02f1f83effd00cd12fbd3f1e58274803901f93c0fe107350c7ecb9004e",
    ),
    // 0007_psps.sql
    (
        7,
        "8579dc84f16e29f5fc3632384f023873fcdc243bfa9960000d4ec57547bc6f0fb6b3078b333b4d160bc7c8e892dd7129",
        "14518ea34817c236ac14a03ce3c33807c1dbc8560cdffae768d55b3e238e051dedd52755f3c669d5674c2ef01e7d6e95",
    ),
    // 0008_payment_links.sql
    (
        8,
        "d01cc26d34692ce36075828284cc102169b490e0c92de57c0aba980de9d9bed5e3fb0a4a05a129c9a3f087b735aaf6c3",
        "a455aca11a359164faeeb21d324108a321afce1d1bfb2fdf4d411b23e4c20f4bf353c6b391df38043f5f59257ad11e71",
    ),
    // 0009_statement.sql
    (
        9,
        "ecd86ea63a9d5d4bf9cccc555f6a5d17c43300b17340cac4513917b437955428cf8e0ed9dfe8f8db3ec8e8550bbc3d53",
        "334b3ec8b6a572ba831999445f2faecd4800be7b09e933b6bf1859a5d37b59d2b394482cc59fd222aa27102606da18cd",
    ),
    // 0010_evidence.sql
    (
        10,
        "ea3c57e97be1f19d864e6d347bfb870a28059aae599dd934747f210c86507e305b1edcd7e6c5009c94a9d0b7d4505cdb",
        "abfdba2bd6052e402994604383a2232ad067a7ec66919b0c2f37c68ea590cdf424e24e2edac12c66df613d05d5a93bc3",
    ),
    // 0011_plans.sql
    (
        11,
        "b9037c73db7356639ec192d58ff62931768306a551248c00d560ffd7e8a292bab1b8f3f4106daa435dc3f22eed2a5708",
        "e215f3e69a62b3132c388f8815d0daf8775befbe30e00ba7fc7edd5908abd47dbd413175663a14c5811e928e2e1137a6",
    ),
    // 0012_safety_charges.sql
    (
        12,
        "e5eb63cfc5697fe72c882262c7f03e15e2c291ff0d598fa83c5e67009d41ae1ff969276b98a916c59235dedf38c28f3d",
        "c094c42eb87c514921783e99b6c6c09ade6c7b1e3d09322d2fda0658b2c02db89f19bbc8a06afa32d96a4647bb07e2eb",
    ),
    // 0013_safety_webhooks.sql
    (
        13,
        "0deb7384b3ec329fe363213bd8e86d0e8719acc96090d8b4383f23137a636aec346ff0accd8487cdbb59c75c32b2bf0e",
        "b74bd566375a7ca84105968794d264c508c6912eb9ce21ea9a8defa9a9a04498e7902bdd1717f49cd1b3756df41245a6",
    ),
    // 0014_safety_ops.sql
    (
        14,
        "c07a7b4746f1c078792cbc397e0d30a762dbbd4b70b1d9a89db997e1eb986e8da6dcd02241518d6245685cc00c19f283",
        "64135d1967e6d362f07b6a007a9acff8287cb75e2a1848ac0bcf2e77784e8c45f2e8a567825e3243f61f055d5730a467",
    ),
    // 0015_sso.sql
    (
        15,
        "22aeaa7ed4f6993907feb0edfdf7281ce6e977f6275406878fc93c800bf8d8de868bc6b65855fdadd0b30810ceb9e6e2",
        "c59de7702d7631ea6af2b7a33173db5d7fb13f4130d5ed4f0f26c6f4e27cca6dc57a0f0a0db289d7a6000d010e590cf6",
    ),
];

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
