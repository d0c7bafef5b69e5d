//! `metron export --format atp|occupancy|apilog|all [-o OUT] DIR`: a run folder in the output
//! formats of the GPU profilers Metron's design started from (`metron-export`), from the
//! files already in it. Runs write them at their end too with `METRON_EXPORT`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const HELP: &str = "\
Usage: metron export --format FORMAT[,FORMAT...] [-o OUT] DIR

Writes a run folder in the formats of the GPU profilers Metron's design started from, from
the files already in it (metadata.json, kernels.csv, the Perfetto trace):
  atp        session.atp: API trace and timestamps per thread (cuda, hsa, hip), kernel
             timestamps, region call sites, perf markers (the regions)
  occupancy  session.occupancy: one row per kernel, the occupancy inputs and the occupancy
  apilog     api.log: one TID / START TIME / DURATION line per GPU API call
  all        the three
The files go into DIR; with -o OUT, into OUT: the file, for one format, or the folder
(created if need be), for several.
Runs write them at their end too with METRON_EXPORT=atp,occupancy,apilog.
";

/// Entry point of `metron export`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    let mut formats = None;
    let mut out: Option<PathBuf> = None;
    let mut dirs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{HELP}");
                return ExitCode::SUCCESS;
            }
            "--format" | "-f" => match it.next() {
                Some(v) => formats = Some(v.clone()),
                None => return crate::usage_error("export: --format needs a value: atp, occupancy, apilog or all"),
            },
            "-o" | "--output" => match it.next() {
                Some(v) => out = Some(PathBuf::from(v)),
                None => return crate::usage_error("export: -o needs a file name"),
            },
            s if s.starts_with("--format=") => formats = Some(s["--format=".len()..].to_string()),
            s if s.starts_with('-') => {
                return crate::usage_error(&format!(
                    "export: unknown flag {s:?}; usage: metron export --format atp|occupancy|apilog|all [-o OUT] DIR"
                ))
            }
            _ => dirs.push(a.clone()),
        }
    }
    let Some(formats) = formats else {
        return crate::usage_error(
            "export: give --format atp, occupancy, apilog or all: metron export --format atp DIR",
        );
    };
    let formats = match metron_export::parse_list(&formats) {
        Ok(f) if !f.is_empty() => f,
        Ok(_) => {
            return crate::usage_error(
                "export: --format names no format: atp, occupancy, apilog or all",
            )
        }
        Err(e) => return crate::usage_error(&format!("export: {e}")),
    };
    let [dir] = &dirs[..] else {
        return crate::usage_error("export: give one run folder: metron export --format atp DIR");
    };
    let dir = Path::new(dir);
    let result = match &out {
        Some(o) if formats.len() == 1 => {
            metron_export::export(dir, formats[0], Some(o)).map(|p| vec![p])
        }
        // Several formats: OUT is the folder their files go into, each under its own name.
        Some(folder) => std::fs::create_dir_all(folder)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot create {}: {e}", folder.display()))
            })
            .and_then(|()| {
                formats
                    .iter()
                    .map(|&f| metron_export::export(dir, f, Some(&folder.join(f.file_name()))))
                    .collect()
            }),
        None => metron_export::write_formats(dir, &formats),
    };
    match result {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("metron: export: {e}");
            ExitCode::FAILURE
        }
    }
}
