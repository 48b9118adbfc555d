//! Certificates and TLS configuration.
//!
//! At start the simulator makes one *server* CA that signs every PSP listener's certificate
//! (SANs `localhost` and `127.0.0.1`), and one *client* CA per PSP that issues the test
//! account's client certificate (CN = the account's client id). Listeners of mTLS PSPs demand a
//! certificate chaining to their own client CA, so a missing or foreign certificate fails the
//! TLS handshake the way a real PSP's gateway does.
//!
//! [`client_config`] builds the rustls client side for tests and tools.

use std::sync::Arc;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The crypto provider used everywhere in the simulator (the workspace builds rustls with ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate authority that can sign leaf certificates.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    cert_der: CertificateDer<'static>,
    cert_pem: String,
}

impl Ca {
    pub fn generate(common_name: &str) -> anyhow::Result<Ca> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params
            .distinguished_name
            .push(DnType::OrganizationName, "psp-sim");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut params);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Ca {
            cert_der: cert.der().clone(),
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert_der.clone()
    }

    /// A server certificate for `localhost` and `127.0.0.1`.
    pub fn issue_server(&self) -> anyhow::Result<Identity> {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params);
        self.issue(params)
    }

    /// A client certificate whose subject CN is `common_name`.
    pub fn issue_client(&self, common_name: &str) -> anyhow::Result<Identity> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params);
        self.issue(params)
    }

    fn issue(&self, params: CertificateParams) -> anyhow::Result<Identity> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
        })
    }
}

fn validity(params: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(365);
}

/// A leaf certificate with its private key.
#[derive(Clone)]
pub struct Identity {
    pub cert_pem: String,
    pub key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl Identity {
    /// The certificate block followed by the private key block, the way Efí's converted
    /// `.p12` looks and the way the `certificate` credential field is filled.
    pub fn combined_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.key_pem)
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key_der.clone().into())
    }
}

/// TLS for one PSP listener: its server certificate, and, when `client_ca` is given, a
/// mandatory client certificate chaining to that CA.
pub fn server_config(
    server: &Identity,
    server_ca: &Ca,
    client_ca: Option<&Ca>,
) -> anyhow::Result<Arc<ServerConfig>> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.cert_der())?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .context("client certificate verifier")?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let chain = vec![server.cert_der.clone(), server_ca.cert_der()];
    let mut config = builder.with_single_cert(chain, server.key())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A rustls client config trusting `ca_pem` only, presenting `identity_pem` (certificate
/// blocks followed by a private key block, as in the `certificate` credential) when given.
pub fn client_config(ca_pem: &str, identity_pem: Option<&str>) -> anyhow::Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.context("CA PEM")?)?;
    }
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let config = match identity_pem {
        Some(pem) => {
            let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .context("client certificate PEM")?;
            let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).context("client key PEM")?;
            builder.with_client_auth_cert(certs, key)?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(config)
}

/// The subject CN of a DER certificate.
pub fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    Some(cn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificate_carries_the_common_name() {
        let ca = Ca::generate("test client CA").unwrap();
        let id = ca.issue_client("Client_Id_abc").unwrap();
        assert_eq!(common_name(&id.cert_der).as_deref(), Some("Client_Id_abc"));
        let pem = id.combined_pem();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(pem.contains("-----BEGIN PRIVATE KEY-----"));
        client_config(ca.cert_pem(), Some(&pem)).unwrap();
    }
}
