use crate::{sys, Component, Field, Unit};
use std::sync::atomic::{AtomicI32, Ordering};

/// Peak resident set size of the process, in bytes (`getrusage(RUSAGE_SELF).ru_maxrss`).
///
/// A region's value is how much the peak grew while it was open (0 if it did not).
/// Cost: one `getrusage` syscall per operation.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeakRss {
    at_start: u64,
    value: u64,
}

fn peak_rss_bytes() -> u64 {
    sys::rusage(libc::RUSAGE_SELF).ru_maxrss as u64 * 1024
}

impl Component for PeakRss {
    const NAME: &'static str = "peak_rss";
    const DESCRIPTION: &'static str = "growth of the process's peak resident set size";
    const COST: &'static str = "getrusage(RUSAGE_SELF): one syscall per operation";
    const FIELDS: &'static [Field] = &[Field::new("bytes", Unit::Bytes)];
    type Value = u64;
    fn start(&mut self) {
        self.at_start = peak_rss_bytes();
    }
    fn stop(&mut self) {
        self.value = peak_rss_bytes().saturating_sub(self.at_start);
    }
    fn sample(&mut self) {
        self.value = peak_rss_bytes();
    }
    fn value(&self) -> u64 {
        self.value
    }
    fn write_fields(&self, out: &mut [f64]) {
        out[0] = self.value as f64;
    }
}

/// Current resident set size of the process, in bytes (`/proc/self/statm`).
///
/// A region's value is the change of RSS while it was open (negative when memory was
/// returned). Cost: one `pread` syscall per operation on a descriptor opened once per process.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageRss {
    at_start: i64,
    value: i64,
}

static STATM_FD: AtomicI32 = AtomicI32::new(-1);

/// Current RSS in bytes, or 0 when `/proc/self/statm` cannot be read.
pub(crate) fn current_rss_bytes() -> i64 {
    let mut fd = STATM_FD.load(Ordering::Relaxed);
    if fd < 0 {
        fd = open_statm();
    }
    let mut buf = [0u8; 128];
    let n = sys::pread_start(fd, &mut buf);
    // statm: "size resident shared text lib data dt", in pages.
    let resident = buf[..n]
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    (resident * sys::page_size()) as i64
}

#[cold]
fn open_statm() -> i32 {
    let fd = sys::open_read_only(c"/proc/self/statm");
    match STATM_FD.compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => fd,
        Err(existing) => {
            // Another thread opened it first; this descriptor is a leak of one fd at most
            // once per racing thread, which is acceptable for a process-lifetime handle.
            existing
        }
    }
}

impl Component for PageRss {
    const NAME: &'static str = "page_rss";
    const DESCRIPTION: &'static str = "change of the process's resident set size";
    const COST: &'static str = "pread of /proc/self/statm: one syscall per operation";
    const FIELDS: &'static [Field] = &[Field::new("bytes", Unit::Bytes)];
    type Value = i64;
    fn start(&mut self) {
        self.at_start = current_rss_bytes();
    }
    fn stop(&mut self) {
        self.value = current_rss_bytes() - self.at_start;
    }
    fn sample(&mut self) {
        self.value = current_rss_bytes();
    }
    fn value(&self) -> i64 {
        self.value
    }
    fn write_fields(&self, out: &mut [f64]) {
        out[0] = self.value as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_rss_sees_touched_memory() {
        let mut c = PageRss::default();
        c.start();
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        c.stop();
        std::hint::black_box(&v);
        assert!(c.value() > 48 << 20, "{}", c.value());
        c.sample();
        assert!(c.value() > 64 << 20);
    }
}
