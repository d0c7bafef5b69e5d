//! A user-written component in a bundle: bytes "sent" by a fake network layer, measured per
//! region next to the CPU time of the thread.
//!
//! ```text
//! cargo run --release --example custom_component
//! ```

use metron::components::ThreadCpuClock;
use metron::{Component, Field, Unit};
use std::sync::atomic::{AtomicU64, Ordering};

static BYTES_SENT: AtomicU64 = AtomicU64::new(0);

/// Bytes sent while a region was open. Cost: one relaxed atomic load per operation.
#[derive(Default)]
struct BytesSent {
    at_start: u64,
    delta: u64,
}

impl Component for BytesSent {
    const NAME: &'static str = "bytes_sent";
    const DESCRIPTION: &'static str = "bytes handed to the network layer";
    const COST: &'static str = "one relaxed atomic load per operation";
    const FIELDS: &'static [Field] = &[Field::new("bytes", Unit::Bytes)];
    type Value = u64;
    fn start(&mut self) {
        self.at_start = BYTES_SENT.load(Ordering::Relaxed);
    }
    fn stop(&mut self) {
        self.delta = BYTES_SENT.load(Ordering::Relaxed) - self.at_start;
    }
    fn value(&self) -> u64 {
        self.delta
    }
    fn write_fields(&self, out: &mut [f64]) {
        out[0] = self.delta as f64;
    }
}

#[derive(Default, metron::Bundle)]
struct Network {
    cpu: ThreadCpuClock,
    sent: BytesSent,
}

fn send(payload: &[u8]) {
    BYTES_SENT.fetch_add(payload.len() as u64, Ordering::Relaxed);
}

fn main() {
    for request in 0..100u64 {
        let _g = metron::scope!("handle request", Network);
        metron::annotate!("request", request);
        send(&vec![0u8; 1000 + request as usize * 10]);
    }
    if let Some(report) = metron::finish() {
        println!(
            "see {}/summary.txt (bytes_sent.bytes per region)",
            report.output_dir.display()
        );
    }
}
