//! What a kernel's code object says about it: the 64-byte kernel descriptor of code objects
//! v3 and later (LLVM AMDGPU "Kernel Descriptor"): LDS and scratch per work-item, and the
//! register counts from the granulated fields of `COMPUTE_PGM_RSRC1`, whose granule depends on
//! the architecture and the wavefront size.

/// What Metron reads from a kernel descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelInfo {
    /// `group_segment_fixed_size`: static LDS per work-group, bytes.
    pub static_lds: u32,
    /// `private_segment_fixed_size`: scratch per work-item, bytes.
    pub scratch: u32,
    /// `kernarg_size`, bytes.
    pub kernarg_size: u32,
    /// Architectural VGPRs per work-item (0 = unknown).
    pub vgprs: u16,
    /// SGPRs per wavefront (0 = unknown or not encoded: GFX10 and later always allocate them).
    pub sgprs: u16,
    /// Wavefront size the kernel was built for (32 or 64).
    pub wave_size: u8,
}

fn u32_at(d: &[u8; 64], at: usize) -> u32 {
    u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

/// The GFX major version of an architecture name (`gfx90a` → 9, `gfx1100` → 11), and whether
/// it is one of the unified-register parts (gfx90a, gfx94x) whose VGPR granule is 8.
fn gfx(arch: &str) -> Option<(u32, bool)> {
    let digits = arch.strip_prefix("gfx")?;
    // The last two characters are minor and stepping (hex); the rest is the major version.
    if digits.len() < 3 {
        return None;
    }
    let major: u32 = digits[..digits.len() - 2].parse().ok()?;
    let unified = major == 9 && (digits.starts_with("90a") || digits.starts_with("94"));
    Some((major, unified))
}

/// Decodes a kernel descriptor for a GPU of architecture `arch` (e.g. `gfx90a`).
pub fn decode(d: &[u8; 64], arch: &str) -> KernelInfo {
    let rsrc1 = u32_at(d, 48);
    let properties = u16::from_le_bytes([d[56], d[57]]);
    // KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32 (bit 10): GFX10 and later only.
    let wave32 = properties & (1 << 10) != 0;
    let vgpr_blocks = rsrc1 & 0x3f;
    let sgpr_blocks = (rsrc1 >> 6) & 0xf;
    let (vgprs, sgprs) = match gfx(arch) {
        Some((major, unified)) => {
            let vgpr_granule = if unified || (major >= 10 && wave32) {
                8
            } else {
                4
            };
            let sgprs = match major {
                6..=8 => (sgpr_blocks + 1) * 8,
                9 => (sgpr_blocks + 1) * 16,
                _ => 0,
            };
            ((vgpr_blocks + 1) * vgpr_granule, sgprs)
        }
        None => (0, 0),
    };
    KernelInfo {
        static_lds: u32_at(d, 0),
        scratch: u32_at(d, 4),
        kernarg_size: u32_at(d, 8),
        vgprs: vgprs as u16,
        sgprs: sgprs as u16,
        wave_size: if wave32 { 32 } else { 64 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(lds: u32, scratch: u32, rsrc1: u32, properties: u16) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[0..4].copy_from_slice(&lds.to_le_bytes());
        d[4..8].copy_from_slice(&scratch.to_le_bytes());
        d[8..12].copy_from_slice(&24u32.to_le_bytes());
        d[48..52].copy_from_slice(&rsrc1.to_le_bytes());
        d[56..58].copy_from_slice(&properties.to_le_bytes());
        d
    }

    #[test]
    fn registers_follow_each_architectures_granule() {
        // 5 VGPR blocks → 6 granules; 2 SGPR blocks → 3 granules.
        let d = descriptor(4096, 16, 5 | (2 << 6), 0);
        let gfx906 = decode(&d, "gfx906");
        assert_eq!((gfx906.vgprs, gfx906.sgprs, gfx906.wave_size), (24, 48, 64));
        assert_eq!(
            (gfx906.static_lds, gfx906.scratch, gfx906.kernarg_size),
            (4096, 16, 24)
        );
        assert_eq!(decode(&d, "gfx90a").vgprs, 48, "unified VGPRs: granule 8");
        assert_eq!(decode(&d, "gfx942").vgprs, 48);
        assert_eq!(decode(&d, "gfx803").sgprs, 24, "GFX8: SGPR granule 8");
        let rdna = decode(&d, "gfx1100");
        assert_eq!(
            (rdna.vgprs, rdna.sgprs),
            (24, 0),
            "wave64 granule 4; SGPRs not encoded"
        );
        let rdna32 = decode(&descriptor(0, 0, 5, 1 << 10), "gfx1030");
        assert_eq!((rdna32.vgprs, rdna32.wave_size), (48, 32));
        assert_eq!(decode(&d, "unknown").vgprs, 0);
    }
}
