//! How many machine instructions a function has (`METRON_FUNCTIONS_MIN_INSTRUCTIONS`),
//! decoded with the `iced-x86` decoder; other architectures count 4-byte words.

/// The number of instructions in `code`, a whole function.
pub fn count(code: &[u8], address: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut decoder =
            iced_x86::Decoder::with_ip(64, code, address, iced_x86::DecoderOptions::NONE);
        let mut instruction = iced_x86::Instruction::default();
        let mut n = 0;
        while decoder.can_decode() {
            decoder.decode_out(&mut instruction);
            n += 1;
        }
        n
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = address;
        (code.len() / 4) as u64
    }
}

/// The instructions of a loaded function of `size` bytes at `address`.
///
/// # Safety
/// `address..address + size` is a function of a module that stays loaded during the call
/// (both from the module's symbol table plus its bias).
pub unsafe fn count_loaded(address: u64, size: u64) -> u64 {
    // SAFETY: forwarded contract.
    let code = unsafe { crate::sys::code(address, size as usize) };
    count(code, address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_of_known_bytes_are_counted() {
        // push rbp; mov rbp, rsp; mov eax, 1; pop rbp; ret
        let code = [0x55, 0x48, 0x89, 0xe5, 0xb8, 1, 0, 0, 0, 0x5d, 0xc3];
        assert_eq!(count(&code, 0x1000), 5);
    }
}
