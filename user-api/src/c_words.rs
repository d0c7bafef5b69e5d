//! C strings read eight bytes at a time: the hash and the comparisons behind the name caches
//! of the C API, which run on every call that passes a name.
//!
//! A byte loop costs about six instructions a byte; these read a word per eight bytes. A
//! word may extend past the string's terminator (into bytes the string does not own), which
//! is harmless on x86-64 Linux as long as the word does not cross into another page: a page
//! that holds one byte of the string is mapped and readable. So a word is read only when it
//! lies within the page of its first byte, and that first byte is always one the string owns
//! (at the latest its terminator). The reads are inline assembly, so the compiler never sees
//! a read outside an object (which Rust leaves undefined) and cannot reason about it.
//!
//! Two flavours: the fast ones ([`CName::is_fast`], [`hash_fast`]) run on the exports' fast
//! path, inline and without calls, and give up (`false`, `None`) when a word would cross a
//! page, which sends the call to the checked path; the exact ones ([`same_name`],
//! [`hash_and_len`]) assemble such a word byte by byte. Where both answer, they agree with
//! the byte-by-byte definition whatever the string's alignment (tested below, with strings
//! ending at a page's last byte before an unmapped page).

use std::ffi::c_char;

const PAGE: usize = 4096;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// FxHash's multiplier.
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The eight bytes at `p` (little-endian), read as one word.
///
/// # Safety
/// `p` is a readable byte and `p + 7` is on the same page.
#[inline(always)]
unsafe fn load_word(p: *const u8) -> u64 {
    let v: u64;
    // SAFETY: the caller guarantees the eight bytes are on one mapped, readable page; an
    // unaligned load is allowed on x86-64. Plain `mov`, no stack, flags untouched.
    unsafe {
        std::arch::asm!(
            "mov {v}, qword ptr [{p}]",
            p = in(reg) p,
            v = out(reg) v,
            options(nostack, preserves_flags, readonly, pure),
        );
    }
    v
}

/// The word of the string's bytes at `p` (`p` is one of its bytes, at the latest its
/// terminator), with the bytes from the terminator on zeroed, and whether the terminator is
/// in it; `None` when the word would cross a page.
///
/// # Safety
/// `p` points into a NUL-terminated string, at or before its terminator.
#[inline(always)]
unsafe fn chunk_fast(p: *const u8) -> Option<(u64, bool)> {
    if (p as usize) % PAGE > PAGE - 8 {
        return None;
    }
    // SAFETY: `p` is a byte of the string, and the word does not leave its page.
    let w = unsafe { load_word(p) };
    let zeros = w.wrapping_sub(ONES) & !w & HIGHS;
    if zeros == 0 {
        return Some((w, false));
    }
    // The lowest flagged byte is the first NUL (flags above it may be false): keep the bytes
    // below it.
    let first = zeros & zeros.wrapping_neg();
    Some((w & ((first >> 7) - 1), true))
}

/// [`chunk_fast`] that never gives up: byte by byte when the word would cross a page.
///
/// # Safety
/// As [`chunk_fast`].
#[inline]
unsafe fn chunk(p: *const u8) -> (u64, bool) {
    // SAFETY: forwarded contract.
    if let Some(c) = unsafe { chunk_fast(p) } {
        return c;
    }
    let mut w = 0u64;
    for i in 0..8 {
        // SAFETY: bytes before `i` were not NUL, so the string goes on to `p + i` at least.
        let b = unsafe { *p.add(i) };
        if b == 0 {
            return (w, true);
        }
        w |= u64::from(b) << (8 * i);
    }
    (w, false)
}

/// How many bytes of a word that holds the terminator (zeroed from it on) come before it.
#[inline(always)]
fn bytes_before_nul(w: u64) -> usize {
    if w == 0 {
        0
    } else {
        8 - (w.leading_zeros() / 8) as usize
    }
}

/// One step of the hash over words.
#[inline(always)]
fn mix(hash: u64, w: u64) -> u64 {
    (hash.rotate_left(5) ^ w).wrapping_mul(SEED)
}

/// A hash of the NUL-terminated string at `name` and its length. The hash is of the string's
/// bytes in words of eight (the last one zero-padded): equal strings hash equal wherever they
/// are.
///
/// # Safety
/// `name` is a valid NUL-terminated string.
pub(crate) unsafe fn hash_and_len(name: *const c_char) -> (u64, usize) {
    let p = name.cast::<u8>();
    let (mut hash, mut len) = (0u64, 0);
    loop {
        // SAFETY: the first `len` bytes were not NUL, so `p + len` is a byte of the string.
        let (w, last) = unsafe { chunk(p.add(len)) };
        hash = mix(hash, w);
        if last {
            return (hash, len + bytes_before_nul(w));
        }
        len += 8;
    }
}

/// The hash of [`hash_and_len`] on the fast path, with the string's first word (zeroed from
/// its terminator on) and whether that word holds the terminator (the string is shorter than
/// eight bytes: then `first == CName::head` of a name says the string is that name). `None`
/// when a word would cross a page.
///
/// # Safety
/// As [`hash_and_len`].
#[inline(always)]
pub(crate) unsafe fn hash_fast(name: *const c_char) -> Option<Hashed> {
    let p = name.cast::<u8>();
    // SAFETY: `p` is the string's first byte (at the latest its terminator).
    let (first, short) = unsafe { chunk_fast(p) }?;
    let hash = mix(0, first);
    if short {
        return Some(Hashed { hash, first, short });
    }
    // SAFETY: the first eight bytes are not NUL.
    unsafe { hash_fast_after_eight(p, hash, first) }
}

/// The rest of [`hash_fast`] for strings of eight bytes or more (out of line, as
/// [`CName::is_fast_after_eight`]).
///
/// # Safety
/// `p` is a valid NUL-terminated string whose first eight bytes are not NUL.
#[inline(never)]
unsafe fn hash_fast_after_eight(p: *const u8, mut hash: u64, first: u64) -> Option<Hashed> {
    let mut at = 8;
    loop {
        // SAFETY: the first `at` bytes were not NUL, so `p + at` is a byte of the string.
        let (w, last) = unsafe { chunk_fast(p.add(at)) }?;
        hash = mix(hash, w);
        if last {
            return Some(Hashed {
                hash,
                first,
                short: false,
            });
        }
        at += 8;
    }
}

/// What a check that handles only strings of up to seven bytes found.
pub(crate) enum Short<T> {
    /// The answer.
    Yes(T),
    /// No, or cannot tell (a word would cross a page): the checked path decides.
    No,
    /// Eight bytes or more: the general fast path ([`hash_fast`], [`CName::is_fast`]).
    Long,
}

/// [`hash_fast`] for strings of up to seven bytes: one word, no loop, so that the callers'
/// fast path needs few registers.
///
/// # Safety
/// As [`hash_and_len`].
#[inline(always)]
pub(crate) unsafe fn hash_short(name: *const c_char) -> Short<Hashed> {
    // SAFETY: `name` is the string's first byte (at the latest its terminator).
    match unsafe { chunk_fast(name.cast()) } {
        None => Short::No,
        Some((_, false)) => Short::Long,
        Some((first, true)) => Short::Yes(Hashed {
            hash: mix(0, first),
            first,
            short: true,
        }),
    }
}

/// What [`hash_fast`] found.
#[derive(Clone, Copy)]
pub(crate) struct Hashed {
    pub(crate) hash: u64,
    first: u64,
    short: bool,
}

/// True when the NUL-terminated string at `ptr` is exactly `name` (which has no NUL).
///
/// # Safety
/// `ptr` is a valid NUL-terminated string.
pub(crate) unsafe fn same_name(ptr: *const c_char, name: &[u8]) -> bool {
    let p = ptr.cast::<u8>();
    let mut at = 0;
    loop {
        // SAFETY: the first `at` bytes equal `name`'s, which has no NUL, so `p + at` is a
        // byte of the string.
        let (w, last) = unsafe { chunk(p.add(at)) };
        let rest = &name[at..];
        match rest.first_chunk::<8>() {
            Some(head) if !last => {
                if w != u64::from_le_bytes(*head) {
                    return false;
                }
                at += 8;
            }
            _ => return last && rest.len() < 8 && w == word_of(rest),
        }
    }
}

/// An interned name with its first eight bytes as a word (zero-padded): what the caches keep,
/// so that a name of up to seven bytes is confirmed with one word read and one compare.
#[derive(Clone, Copy)]
pub(crate) struct CName {
    head: u64,
    bytes: &'static [u8],
}

impl CName {
    pub(crate) const EMPTY: CName = CName {
        head: 0,
        bytes: &[],
    };

    /// `bytes` has no NUL.
    pub(crate) fn new(bytes: &'static [u8]) -> CName {
        CName {
            head: word_of(bytes),
            bytes,
        }
    }

    /// The name's bytes.
    #[inline(always)]
    pub(crate) fn bytes(self) -> &'static [u8] {
        self.bytes
    }

    /// True when the string that [`hash_fast`] hashed into `h` is exactly this name (false
    /// too when it cannot tell, as [`CName::is_fast`]).
    ///
    /// # Safety
    /// `ptr` is the valid NUL-terminated string `h` is of.
    #[inline(always)]
    pub(crate) unsafe fn is_hashed(self, ptr: *const c_char, h: Hashed) -> bool {
        if h.short {
            // Both zero-padded after their last byte: equal words, equal strings.
            return h.first == self.head;
        }
        // SAFETY: forwarded contract.
        unsafe { self.is_fast(ptr) }
    }

    /// [`CName::is_fast`] for names of up to seven bytes (one word, no loop); `Long` for
    /// longer names.
    ///
    /// # Safety
    /// `ptr` is a valid NUL-terminated string.
    #[inline(always)]
    pub(crate) unsafe fn is_short(self, ptr: *const c_char) -> Short<()> {
        if self.bytes.len() >= 8 {
            return Short::Long;
        }
        // SAFETY: `ptr` is the string's first byte (at the latest its terminator). The name's
        // head has a zero byte (it is shorter than eight), so it equals the string's word only
        // when the string ends where the name does.
        match unsafe { chunk_fast(ptr.cast()) } {
            Some((w, _)) if w == self.head => Short::Yes(()),
            _ => Short::No,
        }
    }

    /// True when the NUL-terminated string at `ptr` is exactly this name; false too when it
    /// cannot tell without a word that crosses a page (the caller's checked path then
    /// compares with [`same_name`]). Inline, no calls.
    ///
    /// # Safety
    /// `ptr` is a valid NUL-terminated string.
    #[inline(always)]
    pub(crate) unsafe fn is_fast(self, ptr: *const c_char) -> bool {
        let p = ptr.cast::<u8>();
        // SAFETY: `p` is the string's first byte (at the latest its terminator).
        let Some((w, last)) = (unsafe { chunk_fast(p) }) else {
            return false;
        };
        // Equal words with the terminator in the string's: the name is as long (its padding
        // zeros would differ from a longer string's bytes, its bytes from a shorter one's).
        // SAFETY: the first eight bytes are the name's, which has no NUL.
        w == self.head && (last || unsafe { is_fast_after_eight(self.bytes, p) })
    }
}

/// The rest of [`CName::is_fast`] for strings whose first eight bytes are this name's
/// (out of line, so that short names need no registers for the loop).
///
/// # Safety
/// `p` is a valid NUL-terminated string whose first eight bytes are not NUL.
#[inline(never)]
unsafe fn is_fast_after_eight(name: &[u8], p: *const u8) -> bool {
    // The name's last eight bytes: its last partial word is their top bytes.
    let Some(&last8) = name.last_chunk::<8>() else {
        return false;
    };
    let last8 = u64::from_le_bytes(last8);
    let mut at = 8;
    loop {
        let Some(rest) = name.get(at..) else {
            return false;
        };
        // SAFETY: the first `at` bytes equal the name's, which has no NUL, so `p + at` is a
        // byte of the string.
        let Some((w, last)) = (unsafe { chunk_fast(p.add(at)) }) else {
            return false;
        };
        match rest.first_chunk::<8>() {
            Some(head) if !last => {
                if w != u64::from_le_bytes(*head) {
                    return false;
                }
                at += 8;
            }
            _ => {
                let r = rest.len();
                let expected = if r == 0 { 0 } else { last8 >> (8 * (8 - r)) };
                return last && r < 8 && w == expected;
            }
        }
    }
}

/// A name of up to fifteen bytes as the two words a string equal to it starts with (its bytes,
/// its terminator) and the masks of the bytes that count: the NVTX handlers' cache confirms a
/// name with two loads and no loop ([`TwoWords::is_at_in`]).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct TwoWords {
    head: [u64; 2],
    mask: [u64; 2],
}

impl TwoWords {
    /// Matches no string (its head has a byte outside its mask).
    pub(crate) const NEVER: TwoWords = TwoWords {
        head: [1, 0],
        mask: [0, 0],
    };

    /// `None` for names of sixteen bytes or more; `bytes` has no NUL.
    pub(crate) fn of(bytes: &[u8]) -> Option<TwoWords> {
        if bytes.len() >= 16 {
            return None;
        }
        let counted = bytes.len() + 1;
        let mask_of = |n: usize| match n {
            0 => 0,
            8.. => u64::MAX,
            n => (1u64 << (8 * n)) - 1,
        };
        Some(TwoWords {
            head: [word_of(bytes), word_of(bytes.get(8..).unwrap_or(&[]))],
            mask: [mask_of(counted), mask_of(counted.saturating_sub(8))],
        })
    }

    /// True when sixteen bytes read at `addr` lie on `addr`'s page, which [`TwoWords::is_at_in`]
    /// needs: a property of the address, checked once when it is cached.
    pub(crate) fn readable_at(addr: usize) -> bool {
        addr % PAGE <= PAGE - 16
    }

    /// True when the NUL-terminated string at `ptr` is exactly the name of the words at
    /// `base + 8 * index8 + OFFSET` (an entry of a table of 64-byte entries, `index8` eight
    /// times the entry's index), read in place: seven instructions and two registers, the
    /// address folded into the loads.
    ///
    /// # Safety
    /// `ptr` is a valid NUL-terminated string and [`TwoWords::readable_at`] its address; a
    /// `TwoWords` is at that address.
    #[inline(always)]
    pub(crate) unsafe fn is_at_in<const OFFSET: usize>(
        base: *const u8,
        index8: usize,
        ptr: *const c_char,
    ) -> bool {
        let differs: u64;
        // SAFETY: `ptr` is the string's first byte and `ptr + 15` is on its page (the
        // contract), so both words are mapped (the bytes past the terminator are masked off);
        // the caller guarantees a `TwoWords` (`repr(C)`: heads at 0 and 8, masks at 16 and 24)
        // at the address. Plain loads and ALU operations; no stack.
        unsafe {
            std::arch::asm!(
                "mov {a}, qword ptr [{p}]",
                "and {a}, qword ptr [{base} + {i} * 8 + {mask0}]",
                "xor {a}, qword ptr [{base} + {i} * 8 + {head0}]",
                "mov {b}, qword ptr [{p} + 8]",
                "and {b}, qword ptr [{base} + {i} * 8 + {mask1}]",
                "xor {b}, qword ptr [{base} + {i} * 8 + {head1}]",
                "or {a}, {b}",
                p = in(reg) ptr,
                base = in(reg) base,
                i = in(reg) index8,
                head0 = const OFFSET,
                head1 = const OFFSET + 8,
                mask0 = const OFFSET + 16,
                mask1 = const OFFSET + 24,
                a = out(reg) differs,
                b = out(reg) _,
                options(nostack, readonly, pure),
            );
        }
        differs == 0
    }
}

/// A name of any length as the words a string equal to it starts with (its bytes, its
/// terminator, zero-padded), and the mask of the bytes of the last word that count: the NVTX
/// handlers' cache confirms a long name with a word compare per eight bytes and no page check
/// (the address was checked once, [`NameWords::readable_at`]). The words are leaked: one copy
/// per distinct name, kept by the caller.
#[derive(Clone, Copy)]
pub(crate) struct NameWords {
    words: &'static [u64],
    last_mask: u64,
}

impl NameWords {
    /// The words of `bytes` (which has no NUL), leaked.
    pub(crate) fn leak(bytes: &[u8]) -> NameWords {
        let counted = bytes.len() + 1;
        let mut words = vec![0u64; counted.div_ceil(8)];
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= u64::from(*b) << (8 * (i % 8));
        }
        let tail = counted % 8;
        NameWords {
            words: Box::leak(words.into_boxed_slice()),
            last_mask: if tail == 0 {
                u64::MAX
            } else {
                (1u64 << (8 * tail)) - 1
            },
        }
    }

    /// True when the words [`NameWords::is_at`] reads at `addr` all lie on `addr`'s page.
    pub(crate) fn readable_at(self, addr: usize) -> bool {
        addr % PAGE + 8 * self.words.len() <= PAGE
    }

    /// True when the NUL-terminated string at `ptr` is exactly this name.
    ///
    /// # Safety
    /// `ptr` is a valid NUL-terminated string and [`NameWords::readable_at`] its address.
    #[inline]
    pub(crate) unsafe fn is_at(self, ptr: *const c_char) -> bool {
        let p = ptr.cast::<u8>();
        let Some((last, full)) = self.words.split_last() else {
            return false;
        };
        for (i, w) in full.iter().enumerate() {
            // SAFETY: `p + 8 * i + 7` is on `p`'s page (the contract), which is mapped.
            if unsafe { load_word(p.add(8 * i)) } != *w {
                return false;
            }
        }
        // SAFETY: as above, for the last word; the bytes past the terminator are masked off.
        unsafe { load_word(p.add(8 * full.len())) & self.last_mask == *last }
    }
}

/// The first bytes of `bytes` (at most eight) as a little-endian word, zero-padded.
#[inline]
fn word_of(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .enumerate()
        .fold(0, |w, (i, &b)| w | u64::from(b) << (8 * i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_bytewise(s: &[u8]) -> u64 {
        let mut hash = 0u64;
        let mut chunks = s.chunks(8);
        loop {
            let c = chunks.next().unwrap_or(&[]);
            hash = (hash.rotate_left(5) ^ word_of(c)).wrapping_mul(SEED);
            if c.len() < 8 {
                return hash;
            }
        }
    }

    /// A page that can be read followed by one that cannot, to end strings right before it.
    struct Guarded {
        base: *mut u8,
    }

    impl Guarded {
        fn new() -> Guarded {
            // SAFETY: a fresh private anonymous mapping of two pages; the second is made
            // inaccessible.
            unsafe {
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    2 * PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(base, libc::MAP_FAILED);
                assert_eq!(
                    libc::mprotect(base.cast::<u8>().add(PAGE).cast(), PAGE, libc::PROT_NONE),
                    0
                );
                Guarded { base: base.cast() }
            }
        }

        /// Writes `s` without a NUL so that it ends at the first page's last byte.
        fn slice_at_end(&self, s: &[u8]) -> &[u8] {
            // SAFETY: within the first (writable) page, which lives as long as `self`.
            unsafe {
                let start = self.base.add(PAGE - s.len());
                std::ptr::copy_nonoverlapping(s.as_ptr(), start, s.len());
                std::slice::from_raw_parts(start, s.len())
            }
        }

        /// Writes `s` and its NUL `offset` bytes into the first page, after filling the bytes
        /// around them with 0xAA (what follows a string is not zero).
        fn at_start(&self, offset: usize, s: &[u8]) -> *const c_char {
            assert!(offset + s.len() + 1 + 16 <= PAGE);
            // SAFETY: within the first (writable) page, which lives as long as `self`.
            unsafe {
                std::ptr::write_bytes(self.base, 0xAA, offset + s.len() + 1 + 16);
                let start = self.base.add(offset);
                std::ptr::copy_nonoverlapping(s.as_ptr(), start, s.len());
                *start.add(s.len()) = 0;
                start.cast()
            }
        }

        /// Writes `s` and its NUL so that the NUL is the first page's last byte.
        fn at_end(&self, s: &[u8]) -> *const c_char {
            // SAFETY: within the first (writable) page.
            unsafe {
                let start = self.base.add(PAGE - s.len() - 1);
                std::ptr::copy_nonoverlapping(s.as_ptr(), start, s.len());
                *start.add(s.len()) = 0;
                start.cast()
            }
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base.cast(), 2 * PAGE) };
        }
    }

    /// [`TwoWords::is_at_in`] of one value.
    unsafe fn is_at(words: &TwoWords, p: *const c_char) -> bool {
        let base: *const TwoWords = words;
        // SAFETY: forwarded contract; the words are at `base`.
        unsafe { TwoWords::is_at_in::<0>(base.cast(), 0, p) }
    }

    #[test]
    fn name_words_match_exactly_their_name() {
        let text = b"a-longer-range-name/with-more-than-sixteen-bytes";
        for len in 0..text.len() {
            let s = &text[..len];
            let words = NameWords::leak(s);
            for offset in 0..8 {
                let mut buf = vec![0xAAu8; offset + len + 1 + 16];
                buf[offset..offset + len].copy_from_slice(s);
                buf[offset + len] = 0;
                let p = buf[offset..].as_ptr().cast::<c_char>();
                if !words.readable_at(p as usize) {
                    continue;
                }
                // SAFETY: NUL-terminated; the words read stay on the string's page (checked).
                unsafe {
                    assert!(words.is_at(p), "len {len} offset {offset}");
                    if len > 0 {
                        assert!(!NameWords::leak(&s[..len - 1]).is_at(p));
                        let mut other = s.to_vec();
                        other[len - 1] ^= 1;
                        assert!(!NameWords::leak(&other).is_at(p));
                    }
                    let mut longer = s.to_vec();
                    longer.push(b'x');
                    if NameWords::leak(&longer).readable_at(p as usize) {
                        assert!(!NameWords::leak(&longer).is_at(p));
                    }
                }
            }
        }
        let w = NameWords::leak(b"0123456789abcdefghij");
        assert!(w.readable_at(0x1000) && w.readable_at(0x1fe8));
        assert!(!w.readable_at(0x1fe9));
    }

    #[test]
    fn two_words_match_exactly_their_name() {
        let text = b"nvtx-range/0123456789";
        for len in 0..text.len() {
            let s = &text[..len];
            let Some(words) = TwoWords::of(s) else {
                assert!(len >= 16, "len {len}");
                continue;
            };
            assert!(len < 16);
            for offset in 0..8 {
                // 32 bytes of room after the terminator: both words stay in the buffer.
                let mut buf = vec![0xAAu8; offset + len + 1 + 32];
                buf[offset..offset + len].copy_from_slice(s);
                buf[offset + len] = 0;
                let p = buf[offset..].as_ptr().cast::<c_char>();
                // SAFETY: NUL-terminated, and 16 bytes from `p` are inside `buf`.
                unsafe {
                    assert!(is_at(&words, p), "len {len} offset {offset}");
                    if len > 0 {
                        assert!(!is_at(&TwoWords::of(&s[..len - 1]).unwrap(), p));
                        let mut other = s.to_vec();
                        other[len - 1] ^= 1;
                        assert!(!is_at(&TwoWords::of(&other).unwrap(), p));
                    }
                    let mut longer = s.to_vec();
                    longer.push(b'x');
                    if let Some(w) = TwoWords::of(&longer) {
                        assert!(!is_at(&w, p), "len {len} offset {offset}");
                    }
                    assert!(!is_at(&TwoWords::NEVER, p));
                }
            }
        }
        assert!(TwoWords::readable_at(0x1000) && TwoWords::readable_at(0x1ff0));
        assert!(!TwoWords::readable_at(0x1ff1) && !TwoWords::readable_at(0x1fff));
    }

    #[test]
    fn words_agree_with_bytes_at_every_length_and_alignment_and_at_a_page_end() {
        let guarded = Guarded::new();
        let names = Guarded::new();
        // Strings at the start of a page, so that the fast functions, which give up where a
        // word would cross a page, always answer here (a heap buffer may straddle a page).
        let aligned = Guarded::new();
        let text = b"metron::region/with-a-longer-name_0123456789";
        for len in 0..text.len() {
            let s = &text[..len];
            let expected = hash_bytewise(s);
            for offset in 0..8 {
                let p = aligned.at_start(offset, s);
                // SAFETY: NUL-terminated above.
                unsafe {
                    assert_eq!(
                        hash_and_len(p),
                        (expected, len),
                        "len {len} offset {offset}"
                    );
                    assert!(same_name(p, s));
                    let h = hash_fast(p).unwrap();
                    assert_eq!(h.hash, expected);
                    let leaked: &'static [u8] = Box::leak(s.to_vec().into_boxed_slice());
                    assert!(CName::new(leaked).is_fast(p), "len {len} offset {offset}");
                    assert!(CName::new(leaked).is_hashed(p, h));
                    match (hash_short(p), CName::new(leaked).is_short(p)) {
                        (Short::Yes(hs), Short::Yes(())) => {
                            assert!(len < 8);
                            assert_eq!(hs.hash, expected);
                        }
                        (Short::Long, Short::Long) => assert!(len >= 8),
                        _ => panic!("len {len} offset {offset}: short and long disagree"),
                    }
                    if len > 0 {
                        let shorter: &'static [u8] =
                            Box::leak(s[..len - 1].to_vec().into_boxed_slice());
                        assert!(!CName::new(shorter).is_fast(p));
                        assert!(!CName::new(shorter).is_hashed(p, h));
                        assert!(!matches!(CName::new(shorter).is_short(p), Short::Yes(())));
                        assert!(!same_name(p, &s[..len - 1]));
                        let mut other = s.to_vec();
                        other[len - 1] ^= 1;
                        assert!(!same_name(p, &other));
                        assert!(!CName::new(Box::leak(other.into_boxed_slice())).is_fast(p));
                    }
                    let mut longer = s.to_vec();
                    longer.push(b'x');
                    assert!(!same_name(p, &longer));
                    assert!(!CName::new(Box::leak(longer.into_boxed_slice())).is_fast(p));
                }
            }
            let p = guarded.at_end(s);
            // SAFETY: NUL-terminated, ending at the page's last byte; the next page faults if
            // anything reads it.
            unsafe {
                assert_eq!(hash_and_len(p), (expected, len));
                assert!(same_name(p, s));
                // The fast ones may give up here, but never say yes wrongly.
                if let Some(h) = hash_fast(p) {
                    assert_eq!(h.hash, expected);
                }
                let mut other = s.to_vec();
                other.push(b'x');
                assert!(!CName::new(Box::leak(other.into_boxed_slice())).is_fast(p));
                let mut longer = s.to_vec();
                longer.extend_from_slice(b"0123456789");
                assert!(!same_name(p, &longer));
                // The name compared with ends at a page's end too.
                let c = std::ffi::CString::new(s).unwrap();
                assert!(same_name(c.as_ptr(), names.slice_at_end(s)));
                if len > 0 {
                    assert!(!same_name(c.as_ptr(), names.slice_at_end(&s[..len - 1])));
                }
            }
        }
    }
}
