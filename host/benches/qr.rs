//! `qr/pix_code`: drawing a Pix code's QR image as every created charge does (encode, try the
//! eight masks, PNG, base64), for a dynamic code as PSPs make them (a 77-character location).
//! Run with `cargo xtask bench` (or `cargo bench -p pixgw --bench qr`).

use criterion::{Criterion, criterion_group, criterion_main};

const DYNAMIC_BR_CODE: &str = "00020101021226930014br.gov.bcb.pix2571qrcodes-pix.gerencianet.com.br/v2/cobv/9d36b84fc70b478fb95c12729b90ca255204000053039865406123.455802BR5905EFISA6008SAOPAULO62070503***63047D5B";

fn bench(c: &mut Criterion) {
    let image = pixgw::domain::qr_png_base64(DYNAMIC_BR_CODE).unwrap();
    println!("qr/pix_code image: {} characters of base64", image.len());
    let mut group = c.benchmark_group("qr");
    group.bench_function("pix_code", |b| {
        b.iter(|| pixgw::domain::qr_png_base64(std::hint::black_box(DYNAMIC_BR_CODE)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
