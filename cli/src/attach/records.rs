//! The records of a perf ring, decoded from the bytes `sys::Ring::drain` copied out.
//!
//! Layouts (`linux/perf_event.h`), for the `sample_type` we ask for (IP, TID, TIME,
//! CALLCHAIN, REGS_USER, STACK_USER) with `sample_id_all`:
//!
//! - header: `type: u32, misc: u16, size: u16` (size includes the header);
//! - `PERF_RECORD_SAMPLE` (9): `ip: u64; pid, tid: u32; time: u64; nr: u64, ips[nr];
//!   abi: u64, regs[3] (when abi != 0); size: u64, data[size], dyn_size: u64 (when size != 0)`;
//! - `PERF_RECORD_COMM` (3): `pid, tid: u32; comm: NUL-terminated, padded to 8`;
//! - `PERF_RECORD_FORK` (7) / `PERF_RECORD_EXIT` (4): `pid, ppid, tid, ptid: u32; time: u64`;
//! - `PERF_RECORD_LOST` (2): `id: u64; lost: u64`.

/// One decoded record.
#[derive(Debug, PartialEq)]
pub(crate) enum Record {
    /// A call-stack sample.
    Sample(Sample),
    /// Thread `tid` was named `name`.
    Comm { tid: u32, name: String },
    /// Thread `tid` (of process `pid`) was created.
    Fork { pid: u32, tid: u32 },
    /// Thread `tid` of process `pid` exited.
    Exit { pid: u32, tid: u32 },
    /// The kernel dropped `count` samples (the ring was full).
    Lost { count: u64 },
}

/// A sample as the kernel wrote it.
#[derive(Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// `CLOCK_MONOTONIC` ns (the event uses that clock).
    pub(crate) time_ns: u64,
    pub(crate) ip: u64,
    /// The kernel's frame-pointer walk of the user stack (context markers removed).
    pub(crate) callchain: Vec<u64>,
    /// BP, SP, IP at the sample, when the thread was in user space.
    pub(crate) regs: Option<[u64; 3]>,
    /// The copy of the user stack from SP.
    pub(crate) stack: Vec<u8>,
}

/// Decodes every record of `bytes` (whole records) with `f`.
pub(crate) fn decode(bytes: &[u8], mut f: impl FnMut(Record)) {
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let kind = u32_at(bytes, at);
        let size = u16::from_ne_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        let body = &bytes[at + 8..at + size];
        if let Some(r) = record(kind, body) {
            f(r);
        }
        at += size;
    }
}

fn record(kind: u32, body: &[u8]) -> Option<Record> {
    match kind {
        9 => sample(body).map(Record::Sample),
        3 => {
            let tid = u32_at_checked(body, 4)?;
            let name = body.get(8..)?;
            let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            Some(Record::Comm {
                tid,
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
            })
        }
        7 => Some(Record::Fork {
            pid: u32_at_checked(body, 0)?,
            tid: u32_at_checked(body, 8)?,
        }),
        4 => Some(Record::Exit {
            pid: u32_at_checked(body, 0)?,
            tid: u32_at_checked(body, 8)?,
        }),
        2 => Some(Record::Lost {
            count: u64_at(body, 8)?,
        }),
        _ => None,
    }
}

fn sample(b: &[u8]) -> Option<Sample> {
    let ip = u64_at(b, 0)?;
    let pid = u32_at_checked(b, 8)?;
    let tid = u32_at_checked(b, 12)?;
    let time_ns = u64_at(b, 16)?;
    let nr = u64_at(b, 24)? as usize;
    let mut at = 32;
    let mut callchain = Vec::with_capacity(nr.min(256));
    for _ in 0..nr {
        let a = u64_at(b, at)?;
        // PERF_CONTEXT_* markers (user, kernel, ...) are the top 4095 values.
        if a < (-4095i64) as u64 {
            callchain.push(a);
        }
        at += 8;
    }
    let abi = u64_at(b, at)?;
    at += 8;
    let regs = if abi != 0 {
        let r = [u64_at(b, at)?, u64_at(b, at + 8)?, u64_at(b, at + 16)?];
        at += 24;
        Some(r)
    } else {
        None
    };
    let size = u64_at(b, at)? as usize;
    at += 8;
    let stack = if size != 0 {
        let data = b.get(at..at + size)?;
        let dyn_size = u64_at(b, at + size)? as usize;
        data[..dyn_size.min(size)].to_vec()
    } else {
        Vec::new()
    };
    Some(Sample {
        pid,
        tid,
        time_ns,
        ip,
        callchain,
        regs,
        stack,
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u32_at_checked(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u32, size: usize) -> Vec<u8> {
        let mut v = kind.to_ne_bytes().to_vec();
        v.extend(0u16.to_ne_bytes());
        v.extend((size as u16).to_ne_bytes());
        v
    }

    #[test]
    fn samples_comms_and_losses_decode_and_a_cut_record_is_left() {
        let mut body = Vec::new();
        body.extend(0x1000u64.to_ne_bytes()); // ip
        body.extend(7u32.to_ne_bytes()); // pid
        body.extend(8u32.to_ne_bytes()); // tid
        body.extend(99u64.to_ne_bytes()); // time
        body.extend(3u64.to_ne_bytes()); // nr
        for a in [(-512i64) as u64, 0x1000, 0x2000] {
            body.extend(a.to_ne_bytes());
        }
        body.extend(2u64.to_ne_bytes()); // abi 64
        for r in [0x10u64, 0x20, 0x1000] {
            body.extend(r.to_ne_bytes());
        }
        body.extend(16u64.to_ne_bytes()); // stack size
        body.extend([0xab; 16]);
        body.extend(8u64.to_ne_bytes()); // dyn_size
        let mut bytes = header(9, 8 + body.len());
        bytes.extend(&body);
        let comm = b"worker\0\0";
        bytes.extend(header(3, 8 + 8 + comm.len()));
        bytes.extend(7u32.to_ne_bytes());
        bytes.extend(9u32.to_ne_bytes());
        bytes.extend(comm);
        bytes.extend(header(2, 24));
        bytes.extend(1u64.to_ne_bytes());
        bytes.extend(5u64.to_ne_bytes());
        bytes.extend(header(9, 64)); // cut short
        let mut out = Vec::new();
        decode(&bytes, |r| out.push(r));
        assert_eq!(
            out,
            [
                Record::Sample(Sample {
                    pid: 7,
                    tid: 8,
                    time_ns: 99,
                    ip: 0x1000,
                    callchain: vec![0x1000, 0x2000],
                    regs: Some([0x10, 0x20, 0x1000]),
                    stack: vec![0xab; 8],
                }),
                Record::Comm {
                    tid: 9,
                    name: "worker".into()
                },
                Record::Lost { count: 5 },
            ]
        );
    }
}
