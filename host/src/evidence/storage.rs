//! Where sale evidence photos are kept: outside the database, behind one [`PhotoStore`].
//!
//! - A **directory** (the default, `<data dir>/evidence`): one gateway, or several sharing a
//!   network file system.
//! - **S3-compatible object storage** (`s3://bucket[/prefix]`): several gateways behind a load
//!   balancer each reach every photo. Amazon S3, MinIO, Cloudflare R2, Backblaze B2… The
//!   connection is configured by the standard `AWS_*` variables (`AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT` for a store that is not Amazon's,
//!   `AWS_ALLOW_HTTP=true` for a plain-http endpoint).
//!
//! Both are `object_store` stores, so the gateway speaks one interface; tests use its
//! in-memory store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

/// Where photos go, as the operator configured it (`PIXGW_EVIDENCE_STORE`), parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageLocation {
    Directory(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl StorageLocation {
    /// A directory path, or `s3://bucket[/prefix]`; empty: `<data_dir>/evidence`.
    pub fn parse(text: &str, data_dir: &Path) -> Result<StorageLocation, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(StorageLocation::Directory(data_dir.join("evidence")));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let valid_bucket = (3..=63).contains(&bucket.len())
                && bucket.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                });
            if !valid_bucket {
                return Err(format!(
                    "evidence store {text:?}: the bucket name must have 3 to 63 lower-case letters, digits, dots or hyphens (s3://bucket[/prefix])"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if ObjectPath::parse(prefix).is_err() {
                return Err(format!(
                    "evidence store {text:?}: the prefix {prefix:?} is not a valid object path"
                ));
            }
            return Ok(StorageLocation::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        if text.contains("://") {
            return Err(format!(
                "evidence store {text:?}: give a directory or s3://bucket[/prefix]"
            ));
        }
        Ok(StorageLocation::Directory(PathBuf::from(text)))
    }
}

/// Why the photo storage failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("cannot open the evidence storage {0}: {1}")]
    Open(String, String),
    #[error("no photo {0:?} in the evidence storage")]
    NotFound(String),
    #[error("evidence storage: {0}")]
    Failed(#[from] object_store::Error),
}

/// The photos' storage, shared by every request and the sweeper.
#[derive(Debug, Clone)]
pub struct PhotoStore {
    inner: Arc<dyn ObjectStore>,
    /// Where it is, for logs: a directory or `s3://bucket/prefix`.
    place: String,
}

impl PhotoStore {
    pub fn open(location: &StorageLocation) -> Result<PhotoStore, StorageError> {
        match location {
            StorageLocation::Directory(dir) => PhotoStore::directory(dir),
            StorageLocation::S3 { bucket, prefix } => PhotoStore::s3_from_env(bucket, prefix),
        }
    }

    /// Photos as files under `dir`, created if missing; emptied folders are removed.
    pub fn directory(dir: &Path) -> Result<PhotoStore, StorageError> {
        let place = dir.display().to_string();
        std::fs::create_dir_all(dir)
            .map_err(|e| StorageError::Open(place.clone(), e.to_string()))?;
        let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| StorageError::Open(place.clone(), e.to_string()))?
            .with_automatic_cleanup(true);
        Ok(PhotoStore {
            inner: Arc::new(local),
            place,
        })
    }

    /// An S3 bucket, with the connection from the `AWS_*` variables.
    pub fn s3_from_env(bucket: &str, prefix: &str) -> Result<PhotoStore, StorageError> {
        PhotoStore::s3(
            object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket),
            bucket,
            prefix,
        )
    }

    /// An S3 bucket, connected as `builder` says.
    pub fn s3(
        builder: object_store::aws::AmazonS3Builder,
        bucket: &str,
        prefix: &str,
    ) -> Result<PhotoStore, StorageError> {
        // The S3 client's TLS takes the process's provider; the gateway uses ring throughout.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let place = format!("s3://{bucket}/{prefix}");
        let s3 = builder
            .build()
            .map_err(|e| StorageError::Open(place.clone(), e.to_string()))?;
        Ok(PhotoStore::over(s3, prefix, place))
    }

    /// Photos in memory, gone with the process: for tests.
    pub fn in_memory() -> PhotoStore {
        PhotoStore::over(object_store::memory::InMemory::new(), "", "memory".into())
    }

    /// Any `object_store` store, its keys under `prefix`.
    pub fn over(store: impl ObjectStore, prefix: &str, place: String) -> PhotoStore {
        let inner: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::new(store)
        } else {
            Arc::new(object_store::prefix::PrefixStore::new(store, prefix))
        };
        PhotoStore { inner, place }
    }

    pub fn place(&self) -> &str {
        &self.place
    }

    pub async fn put(&self, key: &str, photo: Bytes) -> Result<(), StorageError> {
        self.inner.put(&path(key)?, photo.into()).await?;
        Ok(())
    }

    pub async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        let found = self
            .inner
            .get(&path(key)?)
            .await
            .map_err(|e| not_found(key, e))?;
        found.bytes().await.map_err(|e| not_found(key, e))
    }

    /// Removes a photo; one that is gone already is not an error (a sweep that was cut short
    /// runs again).
    pub async fn delete(&self, key: &str) -> Result<(), StorageError> {
        match self.inner.delete(&path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn path(key: &str) -> Result<ObjectPath, StorageError> {
    ObjectPath::parse(key).map_err(|e| StorageError::Failed(e.into()))
}

fn not_found(key: &str, error: object_store::Error) -> StorageError {
    match error {
        object_store::Error::NotFound { .. } => StorageError::NotFound(key.to_owned()),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_bad_ones_say_what_to_fix() {
        let data = Path::new("/var/lib/pixgw");
        assert_eq!(
            StorageLocation::parse("", data),
            Ok(StorageLocation::Directory(data.join("evidence")))
        );
        assert_eq!(
            StorageLocation::parse("/srv/photos", data),
            Ok(StorageLocation::Directory("/srv/photos".into()))
        );
        assert_eq!(
            StorageLocation::parse("s3://loja-evidencias", data),
            Ok(StorageLocation::S3 {
                bucket: "loja-evidencias".into(),
                prefix: String::new()
            })
        );
        assert_eq!(
            StorageLocation::parse("s3://loja-evidencias/pixgw/prod/", data),
            Ok(StorageLocation::S3 {
                bucket: "loja-evidencias".into(),
                prefix: "pixgw/prod".into()
            })
        );
        assert!(
            StorageLocation::parse("s3://Loja_Fotos", data)
                .unwrap_err()
                .contains("bucket name")
        );
        assert!(
            StorageLocation::parse("gs://bucket", data)
                .unwrap_err()
                .contains("s3://bucket[/prefix]")
        );
    }

    /// The same operations on every kind of store the gateway can be given.
    async fn round_trip(store: PhotoStore) {
        let key = "mer_1/test/chg_1/evi_1.jpg";
        store
            .put(key, Bytes::from_static(b"\xFF\xD8photo"))
            .await
            .unwrap();
        assert_eq!(store.get(key).await.unwrap().as_ref(), b"\xFF\xD8photo");
        store.delete(key).await.unwrap();
        assert!(matches!(
            store.get(key).await.unwrap_err(),
            StorageError::NotFound(k) if k == key
        ));
        // Deleting again is fine: a sweep may be repeated.
        store.delete(key).await.unwrap();
    }

    #[tokio::test]
    async fn a_directory_keeps_photos_as_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = PhotoStore::directory(&dir.path().join("evidence")).unwrap();
        store
            .put("mer_1/test/chg_1/evi_2.jpg", Bytes::from_static(b"kept"))
            .await
            .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("evidence/mer_1/test/chg_1/evi_2.jpg")).unwrap(),
            b"kept"
        );
        round_trip(store).await;
    }

    #[tokio::test]
    async fn an_object_store_with_a_prefix() {
        let memory: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let store = PhotoStore::over(memory.clone(), "pixgw/prod", "memory".into());
        store
            .put("mer_1/test/chg_1/evi_3.jpg", Bytes::from_static(b"x"))
            .await
            .unwrap();
        // The keys land under the prefix in the bucket.
        assert!(
            memory
                .get(&ObjectPath::from("pixgw/prod/mer_1/test/chg_1/evi_3.jpg"))
                .await
                .is_ok()
        );
        round_trip(store).await;
        round_trip(PhotoStore::in_memory()).await;
    }

    /// The S3 client itself (request signing, paths, answers) against a stand-in for S3 on
    /// loopback: no network, and no real S3 either, which these tests never reach.
    #[tokio::test]
    async fn s3_requests_are_signed_and_keyed_under_the_prefix() {
        use axum::body::Bytes as Body;
        use axum::http::{HeaderMap, Method, StatusCode, Uri};
        use std::collections::HashMap;
        use std::sync::Mutex;

        type Objects = Arc<Mutex<HashMap<String, Vec<u8>>>>;
        let objects: Objects = Arc::default();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let app = {
            let (objects, seen) = (objects.clone(), seen.clone());
            axum::Router::new().fallback(
                move |method: Method, uri: Uri, headers: HeaderMap, body: Body| {
                    let (objects, seen) = (objects.clone(), seen.clone());
                    async move {
                        let auth = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        seen.lock().unwrap().push(format!("{method} {} {auth}", uri.path()));
                        let key = uri.path().to_owned();
                        let mut objects = objects.lock().unwrap();
                        let found = |body: Vec<u8>| {
                            (
                                StatusCode::OK,
                                [
                                    ("etag", "\"0123\"".to_owned()),
                                    ("last-modified", "Sun, 15 Nov 2026 12:45:26 GMT".to_owned()),
                                    ("content-length", body.len().to_string()),
                                ],
                                body,
                            )
                        };
                        let missing = (
                            StatusCode::NOT_FOUND,
                            [("content-type", "application/xml".to_owned())],
                            b"<Error><Code>NoSuchKey</Code><Message>none</Message></Error>".to_vec(),
                        );
                        use axum::response::IntoResponse;
                        match method {
                            Method::PUT => {
                                objects.insert(key, body.to_vec());
                                found(Vec::new()).into_response()
                            }
                            Method::GET => match objects.get(&key) {
                                Some(bytes) => found(bytes.clone()).into_response(),
                                None => missing.into_response(),
                            },
                            Method::DELETE => {
                                objects.remove(&key);
                                StatusCode::NO_CONTENT.into_response()
                            }
                            // DeleteObjects, which the client uses for deletes.
                            Method::POST if uri.query() == Some("delete") => {
                                let body = String::from_utf8_lossy(&body).into_owned();
                                let mut deleted = String::new();
                                for part in body.split("<Key>").skip(1) {
                                    let name = part.split("</Key>").next().unwrap_or_default();
                                    objects.remove(&format!("{key}/{name}"));
                                    deleted.push_str(&format!("<Deleted><Key>{name}</Key></Deleted>"));
                                }
                                (
                                    StatusCode::OK,
                                    [("content-type", "application/xml".to_owned())],
                                    format!(
                                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{deleted}</DeleteResult>"
                                    ),
                                )
                                    .into_response()
                            }
                            _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
                        }
                    }
                },
            )
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let builder = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("loja-evidencias")
            .with_region("sa-east-1")
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_access_key_id("AKIATEST")
            .with_secret_access_key("secret")
            .with_retry(object_store::RetryConfig {
                max_retries: 0,
                ..Default::default()
            });
        let store = PhotoStore::s3(builder, "loja-evidencias", "pixgw").unwrap();
        assert_eq!(store.place(), "s3://loja-evidencias/pixgw");
        store
            .put(
                "mer_1/test/chg_1/evi_4.jpg",
                Bytes::from_static(b"\xFF\xD8s3"),
            )
            .await
            .unwrap();
        assert_eq!(
            objects
                .lock()
                .unwrap()
                .get("/loja-evidencias/pixgw/mer_1/test/chg_1/evi_4.jpg"),
            Some(&b"\xFF\xD8s3".to_vec())
        );
        round_trip(store).await;
        let seen = seen.lock().unwrap().clone();
        assert!(seen.len() >= 5, "{seen:?}");
        for request in &seen {
            assert!(
                request.contains("AWS4-HMAC-SHA256 Credential=AKIATEST/")
                    && request.contains("/sa-east-1/s3/"),
                "signed with SigV4: {request}"
            );
        }
        server.abort();
    }
}
