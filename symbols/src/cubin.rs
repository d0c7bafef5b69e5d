//! Source lines with their inlined-at chains from a CUDA cubin's `.debug_line` (nvcc
//! `-lineinfo`), as `nvdisasm --print-line-info-inline` (`-gi`) prints them.
//!
//! What the cubin holds (nvcc 13.0, sm_90): a DWARF 2 line program, one sequence per kernel,
//! each opened by `DW_LNE_set_address` whose operand a `.rela.debug_line` entry points at the
//! kernel's symbol (every `.text.<kernel>` section starts at address 0, so the address alone
//! does not tell kernels apart; the k-th relocation by offset belongs to the k-th
//! `set_address`). Inlining is an NVIDIA extended opcode, `0x90` with two ULEB operands,
//! which sets the context of the rows after it: the 1-based index, in the current sequence,
//! of the row the code is inlined at (0: not inlined), and the `.debug_str` offset of the
//! inlined function's mangled name. A PC's line is the last row at or before it (as nvdisasm
//! prints); following the context rows gives the chain. gimli decodes the instructions
//! (the opcode comes back as `UnknownExtended`); the rows are run here.

use addr2line::gimli;
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
use std::collections::HashMap;

/// NVIDIA's inlined-call extended opcode (`DW_LNE_lo_user + 0x10`).
const NV_INLINED_CALL: u8 = 0x90;

/// One row of a kernel's line table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CubinRow {
    /// PC offset in the kernel.
    pub address: u64,
    /// Source file (directory joined).
    pub file: String,
    /// Line (0: none).
    pub line: u32,
    /// 1-based index in the kernel's rows of the row this one is inlined at (0: not inlined).
    pub inlined_at: usize,
    /// Mangled name of the inlined function the row is in (empty when not inlined).
    pub function: String,
}

/// The line tables of a cubin's kernels.
#[derive(Clone, Debug, Default)]
pub struct CubinLines {
    kernels: HashMap<String, Vec<CubinRow>>,
}

impl CubinLines {
    /// Reads the `.debug_line` of `cubin` (an ELF); `Err` says what is missing.
    pub fn parse(cubin: &[u8]) -> Result<CubinLines, String> {
        let file = object::File::parse(cubin).map_err(|e| format!("not an ELF cubin: {e}"))?;
        let section = file
            .section_by_name(".debug_line")
            .ok_or("no .debug_line (build with -lineinfo)")?;
        let data = section.data().map_err(|e| format!(".debug_line: {e}"))?;
        let strings = file
            .section_by_name(".debug_str")
            .and_then(|s| s.data().ok())
            .unwrap_or(&[]);
        let mut relocs: Vec<(u64, String)> = section
            .relocations()
            .filter_map(|(offset, r)| match r.target() {
                RelocationTarget::Symbol(i) => file
                    .symbol_by_index(i)
                    .ok()
                    .and_then(|s| s.name().ok())
                    .map(|n| (offset, n.to_string())),
                _ => None,
            })
            .collect();
        relocs.sort();
        let mut names = relocs.into_iter().map(|(_, n)| n);
        let debug_line = gimli::DebugLine::new(data, gimli::LittleEndian);
        let mut kernels = HashMap::new();
        let mut offset = 0usize;
        while offset < data.len() {
            let program = debug_line
                .program(gimli::DebugLineOffset(offset), 8, None, None)
                .map_err(|e| format!(".debug_line at {offset}: {e}"))?;
            let header = program.header();
            let unit_end = offset
                + header.unit_length()
                + if header.format() == gimli::Format::Dwarf64 {
                    12
                } else {
                    4
                };
            let file_name = |index: u64| -> String {
                let Some(f) = header.file(index) else {
                    return String::new();
                };
                let text = |v: gimli::AttributeValue<_>| match v {
                    gimli::AttributeValue::String(s) => String::from_utf8_lossy(
                        gimli::Reader::to_slice(&s).unwrap_or_default().as_ref(),
                    )
                    .into_owned(),
                    _ => String::new(),
                };
                let name = text(f.path_name());
                let dir = f.directory(header).map(text).unwrap_or_default();
                if dir.is_empty() || name.starts_with('/') {
                    name
                } else {
                    format!("{}/{name}", dir.trim_end_matches('/'))
                }
            };
            let string_at = |o: u64| -> String {
                let rest = strings.get(o as usize..).unwrap_or(&[]);
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                String::from_utf8_lossy(&rest[..end]).into_owned()
            };
            let (line_base, line_range) = (i64::from(header.line_base()), header.line_range());
            let (opcode_base, min_len) =
                (header.opcode_base(), header.minimum_instruction_length());
            let (mut address, mut line, mut file_index) = (0u64, 1i64, 1u64);
            let mut context = (0usize, String::new());
            let mut rows: Vec<CubinRow> = Vec::new();
            let mut instructions = header.instructions();
            while let Some(ins) = instructions
                .next_instruction(header)
                .map_err(|e| format!(".debug_line: {e}"))?
            {
                use gimli::LineInstruction as I;
                let mut emit = false;
                match ins {
                    I::Special(op) => {
                        let adjusted = op - opcode_base;
                        let advance = u64::from(adjusted / line_range);
                        address += advance * u64::from(min_len);
                        line += line_base + i64::from(adjusted % line_range);
                        emit = true;
                    }
                    I::Copy => emit = true,
                    I::AdvancePc(n) => address += n * u64::from(min_len),
                    I::AdvanceLine(n) => line += n,
                    I::SetFile(f) => file_index = f,
                    I::ConstAddPc => {
                        let adjusted = 255 - opcode_base;
                        address += u64::from(adjusted / line_range) * u64::from(min_len);
                    }
                    I::FixedAddPc(n) => address += u64::from(n),
                    I::SetAddress(a) => address = a,
                    I::UnknownExtended(op, operands) if op.0 == NV_INLINED_CALL => {
                        let mut r = operands;
                        let at = gimli::Reader::read_uleb128(&mut r).unwrap_or(0);
                        let name = gimli::Reader::read_uleb128(&mut r).unwrap_or(0);
                        context = (
                            at as usize,
                            if at == 0 {
                                String::new()
                            } else {
                                string_at(name)
                            },
                        );
                    }
                    I::EndSequence => {
                        let kernel = names.next().unwrap_or_default();
                        kernels.insert(kernel, std::mem::take(&mut rows));
                        (address, line, file_index) = (0, 1, 1);
                        context = (0, String::new());
                    }
                    _ => {}
                }
                if emit {
                    rows.push(CubinRow {
                        address,
                        file: file_name(file_index),
                        line: u32::try_from(line).unwrap_or(0),
                        inlined_at: context.0,
                        function: context.1.clone(),
                    });
                }
            }
            if unit_end <= offset {
                break;
            }
            offset = unit_end;
        }
        Ok(CubinLines { kernels })
    }

    /// The kernels (mangled names) with line tables.
    pub fn kernels(&self) -> impl Iterator<Item = &str> {
        self.kernels.keys().map(String::as_str)
    }

    /// The rows of `kernel`, in program order.
    pub fn rows(&self, kernel: &str) -> &[CubinRow] {
        self.kernels.get(kernel).map_or(&[], Vec::as_slice)
    }

    /// The source of the instruction at `pc_offset` in `kernel`, innermost first: its own
    /// `(file, line)`, then each `(file, line)` it is inlined at, out to the kernel's own line.
    /// Empty when the kernel has no row at or before `pc_offset`.
    pub fn chain(&self, kernel: &str, pc_offset: u64) -> Vec<(String, u32)> {
        let rows = self.rows(kernel);
        // The last row at or before the PC, in program order among equal addresses.
        let Some(mut i) = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.address <= pc_offset)
            .max_by_key(|(i, r)| (r.address, *i))
            .map(|(i, _)| i)
        else {
            return Vec::new();
        };
        let mut out = vec![(rows[i].file.clone(), rows[i].line)];
        // Each step goes to an earlier row; the bound stops a malformed cycle.
        for _ in 0..rows.len() {
            let at = rows[i].inlined_at;
            if at == 0 || at > rows.len() || at - 1 == i {
                break;
            }
            i = at - 1;
            out.push((rows[i].file.clone(), rows[i].line));
        }
        out
    }
}
