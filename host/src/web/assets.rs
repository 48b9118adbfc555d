//! The dashboard's static files, compiled in: `/dashboard/static/<name>`. Each URL carries
//! the build's content hash (`?v=`), so browsers may keep them for a year.

use std::sync::Arc;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::App;

/// (name, content type, bytes)
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../dashboard/static/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../dashboard/static/app.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../../../dashboard/static/favicon.svg"),
    ),
];

pub fn router() -> Router<Arc<App>> {
    Router::new().route("/dashboard/static/{name}", get(serve))
}

async fn serve(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

/// A short hash of all static files: templates link `app.css?v={{ version }}`, so a new build
/// is fetched at once despite the long cache.
pub fn version() -> &'static str {
    static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (_, _, bytes) in FILES {
            h.update(bytes);
        }
        hex::encode(&h.finalize()[..6])
    });
    &VERSION
}
