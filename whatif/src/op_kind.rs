//! What a device operation is, a kernel, a copy or a set, told from its name: the trace names
//! a copy `Memcpy <direction>` and a set `Memset` (CUPTI's and ROCm's records alike), and a
//! kernel by its function. The critical-path table labels each operation so, and the GPU's
//! idle time counts copies and sets apart from kernels.

/// The kind of a device operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A kernel (any name that is not a copy's or a set's).
    Kernel,
    /// A memory copy.
    Copy,
    /// A memory set.
    Set,
}

impl OpKind {
    /// The kind of the operation named `name`. Besides Metron's own names, the spellings other
    /// tools give (`CopyDtoH`, `[CUDA memcpy HtoD]`, `[CUDA memset]`) are recognised, for
    /// recordings converted from them; a kernel whose function is named after copying
    /// (`copy_kernel`) stays a kernel.
    pub fn of(name: &str) -> OpKind {
        let lower = name.to_ascii_lowercase();
        let n = lower.strip_prefix("[cuda ").unwrap_or(&lower);
        let n = n.strip_prefix('[').unwrap_or(n);
        if n.starts_with("memset") {
            OpKind::Set
        } else if n.starts_with("memcpy") || copy_with_direction(n) {
            OpKind::Copy
        } else {
            OpKind::Kernel
        }
    }

    /// How the table writes it before the operation's name.
    pub fn word(self) -> &'static str {
        match self {
            OpKind::Kernel => "kernel",
            OpKind::Copy => "copy",
            OpKind::Set => "set",
        }
    }
}

/// `copy` and a direction (`CopyDtoH`, `copy HtoD`), not a kernel whose name starts with the
/// word (`copy_kernel`, `copy_to_device`).
fn copy_with_direction(lower: &str) -> bool {
    let Some(rest) = lower.strip_prefix("copy") else {
        return false;
    };
    let b = rest.trim_start().as_bytes();
    b.len() >= 4 && b[0].is_ascii_alphabetic() && &b[1..3] == b"to" && b[3].is_ascii_alphabetic()
}

#[cfg(test)]
mod tests {
    use super::OpKind;

    #[test]
    fn copies_and_sets_are_told_from_kernels_by_their_names() {
        assert_eq!(OpKind::of("Memcpy HtoD"), OpKind::Copy);
        assert_eq!(OpKind::of("Memcpy DtoD"), OpKind::Copy);
        assert_eq!(OpKind::of("CopyDtoH"), OpKind::Copy);
        assert_eq!(OpKind::of("[CUDA memcpy HtoD]"), OpKind::Copy);
        assert_eq!(OpKind::of("[memcpy DtoH]"), OpKind::Copy);
        assert_eq!(OpKind::of("Memset"), OpKind::Set);
        assert_eq!(OpKind::of("[CUDA memset]"), OpKind::Set);
        assert_eq!(OpKind::of("busy_kernel"), OpKind::Kernel);
        // A kernel whose function name mentions copying is still a kernel.
        assert_eq!(OpKind::of("copy_kernel(float*, int)"), OpKind::Kernel);
        assert_eq!(OpKind::of("copy_to_device"), OpKind::Kernel);
        assert_eq!(OpKind::of("copytoken"), OpKind::Kernel);
        assert_eq!(OpKind::of("ampere_sgemm_128x64_nn"), OpKind::Kernel);
    }
}
