//! The simulated PSPs. Each module states one PSP's parameters; adding a PSP means adding a
//! module and a line to [`ALL`].

use std::sync::Arc;

use crate::{Common, Psp};

pub mod asaas;
pub mod bb;
pub mod bradesco;
pub mod efi;
pub mod inter;
pub mod itau;
pub mod iugu;
pub mod mercadopago;
pub mod openpix;
pub mod pagbank;
pub mod santander;
pub mod sicredi;
pub mod stripe;

type Build = fn(Arc<Common>) -> anyhow::Result<Arc<dyn Psp>>;

/// Provider id → constructor.
pub const ALL: &[(&str, Build)] = &[
    ("asaas", asaas::build),
    ("bb", bb::build),
    ("bradesco", bradesco::build),
    ("efi", efi::build),
    ("inter", inter::build),
    ("itau", itau::build),
    ("iugu", iugu::build),
    ("mercadopago", mercadopago::build),
    ("openpix", openpix::build),
    ("pagbank", pagbank::build),
    ("santander", santander::build),
    ("sicredi", sicredi::build),
    ("stripe", stripe::build),
];
